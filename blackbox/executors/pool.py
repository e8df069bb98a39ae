"""The one submit/collect/retry loop of the executors that evaluate on a pool of workers (loky,
futures; inside each node of the ``ray`` plugin, its node-local loky pool).

:class:`PoolExecutor` evaluates a generation as ``Population.split`` makes it: the shared part is
published once (a file in shared memory, an object in Ray's store, or carried by each task), and
each set of rows becomes a task. The loop hands tasks to the workers while they have room, takes
each result as it comes (results are joined by row number, so arrival order never matters), and:

- a worker that dies (its process killed, its pool broken, its actor lost) has its tasks run
  again, each counting one attempt, up to ``max_retries``; the dead worker is replaced once;
- with a ``timeout`` (executors that can kill one worker), a task running longer has its worker
  killed; a task of several rows is then retried one row per task to find the hung rows, and a
  hung single row raises ``EvaluationError`` (``on_timeout="error"``) or scores ``-inf``
  (``"worst"``). Tasks that died with a worker we killed run again without counting an attempt;
- an evaluation that raises surfaces as the worker's ``EvaluationError`` naming the row and seed.

A subclass says how to reach its workers: ``_submit`` (start a task, return a
``concurrent.futures.Future`` and the worker or pool it went to), ``_is_lost`` (which errors mean
the worker went away), and optionally ``_publish``/``_retract``, ``_has_room``/``_released``,
``_replace``, ``_overdue``, ``_abandon`` and ``_received``.

A scheduler of its own drives a pool row set by row set through the public :meth:`~PoolExecutor.publish`,
:meth:`~PoolExecutor.submit_rows`, :meth:`~PoolExecutor.retract` and :meth:`~PoolExecutor.is_lost`:
the ``ray`` plugin's nodes do (each composes a ``LokyExecutor``), because their rows move between
nodes while a generation runs (stealing, lending, backups); they retry a dead worker's rows on
their node-local pool by this loop's :class:`RetryRule`. The plugin's driver makes one call per node a
generation; a lost or silent node's rows are redone in a new round of calls.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import queue as queues
from abc import abstractmethod
from collections import deque
from typing import Any

import numpy as np

from ..core.executor import Executor
from ..core.population import Population
from ..core.problem import EvalResult
from ..core.rows import Rows, Shared
from ..errors import EvaluationError, WorkerError
from .wire import DispatchStats, join_results
from .worker import Outcome, decode_outcome

__all__ = ["PoolExecutor", "RetryRule", "WorkerLost", "evaluation_timeout_error"]


class WorkerLost(Exception):
    """A task could not run because its worker went away (``_submit`` raises it for a dead pool)."""

    def __init__(self, domain: object, cause: BaseException):
        super().__init__(str(cause))
        self.domain, self.cause = domain, cause


def evaluation_timeout_error(rows: Rows, timeout: float) -> EvaluationError:
    """The error for a single row that hung past the timeout."""
    row, seed = int(rows.index[0]), int(rows.seeds[0]) if rows.seeds is not None else -1
    return EvaluationError(
        f"evaluation of row {row} (seed {seed}) did not finish within the timeout of {timeout:g} s; "
        f"its worker was killed and replaced", row=row, seed=seed,
    )


class RetryRule:
    """The retry rule of one generation, shared by :meth:`PoolExecutor.run` and by schedulers of their
    own (the ray plugin's nodes): a dead worker or pool is counted once however many tasks it took
    down; a task's rows run again after each death, at most ``max_retries`` times."""

    def __init__(self, max_retries: int, died: str = "a worker died"):
        self.max_retries, self.died = int(max_retries), died
        self.dead: list[object] = []

    def first_death(self, domain: object) -> bool:
        """True the first time ``domain`` (a worker or pool) is seen dead: count it, replace it."""
        if any(d is domain for d in self.dead):
            return False
        self.dead.append(domain)
        return True

    def give_up(self, rows: Rows, attempt: int, cause: BaseException) -> WorkerError | None:
        """The error once ``rows`` were in flight at ``attempt`` deaths, more than ``max_retries``;
        else None (run them again)."""
        if attempt <= self.max_retries:
            return None
        return WorkerError(f"rows {rows.spans()} were in flight when {self.died} {attempt} times "
                           f"(max_retries={self.max_retries}); last failure: {cause}")


@dataclasses.dataclass(eq=False)
class _Task:
    rows: Rows
    attempt: int = 0
    domain: object = None  # the worker or pool it was handed to


class PoolExecutor(Executor):
    """Base of executors whose workers evaluate sets of rows: one evaluate(), one retry loop."""

    #: How the retry error names a lost worker: "rows 0..3 were in flight when {died} 2 times".
    died = "a worker died"
    max_retries: int = 3
    timeout: float | None = None
    on_timeout: str = "error"

    def __init__(self) -> None:
        super().__init__()
        self.stats = DispatchStats()
        self._number = 0

    # -- what a subclass provides -------------------------------------------------------------
    def _chunks(self, rows: int) -> int:
        """How many tasks a generation of ``rows`` rows is cut into."""
        return min(rows, self.workers)

    def _publish(self, shared: Shared) -> None:
        """Make ``shared`` available to the workers (and count its bytes)."""
        self.stats.broadcast_bytes += shared.nbytes

    def _retract(self, shared: Shared) -> None:
        """The generation is over: drop what ``_publish`` made."""

    @abstractmethod
    def _submit(self, shared: Shared, rows: Rows) -> tuple[cf.Future[Outcome], object]:
        """Start evaluating ``rows``: the future of its Outcome, and the worker or pool it went to.

        Raises :class:`WorkerLost` when the pool is already broken.
        """

    def _is_lost(self, error: BaseException) -> bool:
        """True when a task's exception means its worker went away (retry), not a failure to run."""
        return False

    def _has_room(self) -> bool:
        """True while another task can be handed out now (Ray keeps two in flight per actor)."""
        return True

    def _released(self, future: cf.Future[Outcome]) -> None:
        """``future``'s task is over (done, lost, or given up as hung)."""

    def _replace(self, domain: object, cause: BaseException, outstanding: list[Rows]) -> None:
        """``domain`` (a worker or pool) died: replace it, or raise if it cannot be (called once)."""

    def _overdue(self, running: list[cf.Future[Outcome]]) -> list[cf.Future[Outcome]]:
        """Tasks past the timeout, whose workers were just killed (only executors that can)."""
        return []

    def _abandon(self, running: list[cf.Future[Outcome]]) -> None:
        """The generation failed: stop what still runs, as far as possible."""
        for future in running:
            future.cancel()

    def _interrupted(self, running: list[cf.Future[Outcome]]) -> None:
        """Ctrl-C or an exit arrived during a generation: by default, as :meth:`_abandon` (loky and
        the futures process pool kill their workers at once instead)."""
        self._abandon(running)

    def _received(self, outcome: Outcome) -> None:
        """Count an outcome that came back (its payload crossed the wire)."""
        self.stats.result_bytes += outcome.nbytes

    def _could_not_run(self, rows: Rows, error: BaseException) -> WorkerError:
        return WorkerError(f"{self.name} could not run rows {rows.spans()}: {type(error).__name__}: {error}")

    # -- row sets on request, for a scheduler of its own (the ray plugin's node) -------------------
    def publish(self, shared: Shared) -> None:
        """Make ``shared`` available to the workers until :meth:`retract` (one generation's part)."""
        self._require_started()
        self._publish(shared)

    def submit_rows(self, shared: Shared, rows: Rows) -> tuple[cf.Future[Outcome], object]:
        """Start evaluating ``rows`` under a published ``shared``: the future of its ``Outcome``
        (``blackbox.executors.worker.decode_outcome`` reads it), and the worker or pool it went to
        (one death breaks a pool and every task in it: count it once per pool). Raises
        :class:`WorkerLost` when the pool is already broken; a caller that schedules rows itself
        retries them as :meth:`run` does, at most ``max_retries`` times."""
        self._require_started()
        return self._submit(shared, rows)

    def retract(self, shared: Shared) -> None:
        """The generation of ``shared`` is over: drop what :meth:`publish` made."""
        self._retract(shared)

    def is_lost(self, error: BaseException) -> bool:
        """True when a task's exception means its worker went away (run the rows again)."""
        return self._is_lost(error)

    # -- the protocol ---------------------------------------------------------------------------
    def evaluate(
        self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None
    ) -> EvalResult:
        self._require_started()
        shared, parts = population.split(self._chunks(len(population)), seeds=seeds, state=state)
        return self.run(shared, parts)

    def run(self, shared: Shared, parts: list[Rows]) -> EvalResult:
        """Evaluate ``parts`` (any rows of one generation, in any grouping) under ``shared``.

        Returns the results of every row of ``parts`` in row order. Each call is a new generation
        for the workers' caches, whatever ``shared.number`` says.
        """
        self._require_started()
        self._number += 1
        shared = dataclasses.replace(shared, number=self._number)
        self.stats.generations += 1
        self._publish(shared)
        try:
            done, worst = self._collect(shared, parts)
        finally:
            self._retract(shared)
        return join_results(done, worst)

    # -- the loop ---------------------------------------------------------------------------------
    def _collect(self, shared: Shared, parts: list[Rows]) -> tuple[list[tuple[Rows, EvalResult]], list[Rows]]:
        """Results of every part, and the rows that hung and score worst."""
        todo = deque(_Task(rows) for rows in parts)
        arrived: queues.SimpleQueue[cf.Future[Outcome] | None] = queues.SimpleQueue()
        running: dict[cf.Future[Outcome], _Task] = {}
        done: list[tuple[Rows, EvalResult]] = []
        worst: list[Rows] = []
        retries = RetryRule(self.max_retries, self.died)  # each dead worker or pool counted once
        killed: list[object] = []  # those we killed for a timeout
        dying: set[cf.Future[Outcome]] = set()  # tasks given up as hung, whose worker's end we wait to see
        failure: EvaluationError | None = None  # a hung row with on_timeout="error": raised at the end
        poll = None if self.timeout is None else max(0.01, min(0.5, self.timeout / 10))

        def lost(task: _Task, domain: object, cause: BaseException) -> None:
            ours = any(k is domain for k in killed)
            if retries.first_death(domain):
                if not ours:
                    self.stats.worker_failures += 1
                outstanding = [task.rows] + [t.rows for t in todo] + [t.rows for t in running.values()]
                self._replace(domain, cause, outstanding)
            self.stats.resubmitted += 1
            if not ours:
                task.attempt += 1
                failed = retries.give_up(task.rows, task.attempt, cause)
                if failed is not None:
                    raise failed from cause
            todo.appendleft(task)

        try:
            while todo or running or dying:
                if failure is not None:
                    todo.clear()  # finish what runs (the killed workers are seen gone), then raise
                # After a kill, nothing more goes to that worker's pool until its end has been seen
                # (all its tasks came back), so no task lands on a pool about to break.
                held = bool(dying) or (bool(killed) and any(
                    any(t.domain is k for k in killed) for t in running.values()))
                while todo and not held and self._has_room():
                    task = todo.popleft()
                    self.stats.tasks += 1
                    try:
                        future, task.domain = self._submit(shared, task.rows)
                    except WorkerLost as exc:
                        lost(task, exc.domain, exc.cause)
                        continue
                    running[future] = task
                    future.add_done_callback(arrived.put)
                if not (running or dying):
                    continue
                try:
                    arrival: cf.Future[Outcome] | None = arrived.get(timeout=poll)
                except queues.Empty:
                    arrival = None
                if arrival is not None and arrival in dying:
                    dying.discard(arrival)
                elif arrival is not None and arrival in running:
                    future = arrival
                    task = running.pop(future)
                    self._released(future)
                    error = future.exception()
                    if error is None:
                        outcome = future.result()
                        self._received(outcome)
                        result, meta = decode_outcome(outcome, task.rows, self.name)
                        self.stats.record(meta)
                        done.append((task.rows, result))
                    elif self._is_lost(error):
                        lost(task, task.domain, error)
                    else:
                        raise self._could_not_run(task.rows, error) from error
                if self.timeout is not None:
                    for future in self._overdue(list(running)):
                        task = running.pop(future)
                        self._released(future)
                        dying.add(future)
                        self.stats.timeouts += 1
                        killed.append(task.domain)
                        if len(task.rows) > 1:  # find the hung rows: one row per task
                            singles = [_Task(rows, task.attempt) for rows in task.rows.singles()]
                            todo.extendleft(reversed(singles))
                            self.stats.resubmitted += len(singles)
                        elif self.on_timeout == "error":
                            failure = failure or evaluation_timeout_error(task.rows, self.timeout)
                        else:
                            worst.append(task.rows)
        except Exception:
            self._abandon(list(running))
            raise
        except BaseException:  # Ctrl-C, SystemExit
            # Not abandon then interrupt: a process pool's future cancelled just before its workers
            # are killed makes Python 3.11's manager thread print an InvalidStateError traceback.
            self._interrupted(list(running))
            raise
        if failure is not None:
            raise failure
        return done, worst
