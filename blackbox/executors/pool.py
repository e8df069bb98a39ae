"""The one submit/collect/retry loop of the executors that evaluate on workers that can be lost:
loky and futures (:class:`PoolExecutor`), and the ``ray`` plugin's driver, whose workers are its
node aggregators.

:class:`TaskLoop` is the loop: tasks wait in a queue and are handed to the workers while they have
room; each result is taken as it comes (joined by row number, so arrival order never matters); a
worker that went away is replaced once however many tasks it took down, and its tasks are run
again; an error that is not a lost worker raises; running tasks are checked for being overdue after
each arrival and every ``poll`` seconds. A loop says how (``dispatch``, ``accept``, ``is_lost``,
``replace``, ``redo``, ``overdue``, ...).

:class:`PoolExecutor` evaluates a generation as ``Population.split`` makes it: the shared part is
published once (a file in shared memory, an object in Ray's store, or carried by each task), and
each set of rows becomes a task. Its loop:

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

The ``ray`` plugin's driver runs each generation through a :class:`TaskLoop` of its own: a task
is one node's call for its share of a round; a node whose call raises ``RayActorError`` is a lost
worker (dropped once), a node silent past the heartbeat is overdue (fenced, the round abandoned on
the others); once a round is all in, the rows still missing go to the survivors in the next round.
Its nodes schedule rows themselves, because rows move between nodes while a generation runs
(stealing, lending, backups): each composes a ``LokyExecutor`` and drives it row set by row set
through the public :meth:`~PoolExecutor.publish`, :meth:`~PoolExecutor.submit_rows`,
:meth:`~PoolExecutor.retract` and :meth:`~PoolExecutor.is_lost`, retrying a dead worker's rows
by this loop's :class:`RetryRule`.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import queue as queues
from abc import ABC, abstractmethod
from collections import deque
from typing import Any, Generic, TypeVar

import numpy as np

from ..core.executor import Executor
from ..core.population import Population
from ..core.problem import EvalResult
from ..core.rows import Rows, Shared
from ..errors import EvaluationError, WorkerError
from .wire import DispatchStats, join_results
from .worker import Outcome, decode_outcome

__all__ = ["PoolExecutor", "RetryRule", "Task", "TaskLoop", "WorkerLost", "evaluation_timeout_error"]

_V = TypeVar("_V")


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
class Task:
    """What one call to a worker evaluates: ``rows`` (a :class:`Rows` for a pool; the ray driver's
    row positions for one node), the deaths it has seen (``attempt``) and the worker or pool it went
    to (``domain``)."""

    rows: Any
    attempt: int = 0
    domain: object = None


class TaskLoop(ABC, Generic[_V]):
    """The submit/collect/retry loop of one generation, over workers that can be lost (``_V``: what a task's
    future holds).

    Tasks wait in ``todo``; :meth:`dispatch` hands them out (through :meth:`start`) while there is
    room; each arrival is taken as it comes, whatever its order: a result goes to :meth:`accept`, a
    lost worker (:meth:`is_lost`) to :meth:`lost` (its domain :meth:`replace`-d once, however many
    tasks it took down; the task :meth:`redo`-ne), any other error is raised (:meth:`failed`);
    :meth:`overdue` runs after each arrival and every ``poll`` seconds (timeouts, heartbeats). On an
    error the running tasks are :meth:`abandon`-ed; on Ctrl-C :meth:`interrupted`.

    :class:`PoolExecutor` runs every generation through it (one task a set of rows); the ``ray``
    plugin's driver runs its rounds of node calls through it (one task a node's call).
    """

    def __init__(self, retries: RetryRule, poll: float | None = None):
        self.retries, self.poll = retries, poll
        self.todo: deque[Task] = deque()
        self.running: dict[cf.Future[_V], Task] = {}
        self.arrived: queues.SimpleQueue[cf.Future[_V]] = queues.SimpleQueue()

    # -- what a loop provides ---------------------------------------------------------------------
    @abstractmethod
    def dispatch(self) -> None:
        """Hand out tasks of ``todo`` now, each through :meth:`start`, while there is room."""

    @abstractmethod
    def accept(self, task: Task, value: _V) -> None:
        """``task`` came back with ``value``."""

    def outstanding(self) -> bool:
        """True while the loop must go on with nothing to do and nothing running (dispatch starts more)."""
        return False

    def is_lost(self, error: BaseException) -> bool:
        """True when a task's exception means its worker went away (redo), not a failure to run."""
        return False

    def failed(self, task: Task, error: BaseException) -> BaseException:
        """The error to raise for a task that failed to run (not a lost worker)."""
        return error

    def replace(self, domain: object, cause: BaseException, task: Task) -> None:
        """``domain`` (a worker or pool) died: replace it, count it, or raise (called once a domain)."""

    def redo(self, task: Task, cause: BaseException) -> None:
        """``task``'s worker was lost: run it again (first in line)."""
        self.todo.appendleft(task)

    def released(self, future: cf.Future[_V]) -> None:
        """``future``'s task is over (done, lost, or given up)."""

    def stray(self, future: cf.Future[_V]) -> None:
        """A future that arrived after its task was given up (:meth:`overdue`)."""

    def overdue(self) -> None:
        """Give up running tasks that took too long (pop them from ``running``), as the loop decides."""

    def abandon(self, running: list[cf.Future[_V]]) -> None:
        """The generation failed: stop what still runs, as far as possible."""
        for future in running:
            future.cancel()

    def interrupted(self, running: list[cf.Future[_V]]) -> None:
        """Ctrl-C or an exit arrived during the loop: by default, as :meth:`abandon`."""
        self.abandon(running)

    # -- the loop ---------------------------------------------------------------------------------
    def start(self, future: cf.Future[_V], task: Task) -> None:
        """``task`` now runs as ``future`` (its arrival is queued when it is done)."""
        self.running[future] = task
        future.add_done_callback(self.arrived.put)

    def lost(self, task: Task, domain: object, cause: BaseException) -> None:
        """``task``'s worker ``domain`` went away: replace it once, then redo the task."""
        if self.retries.first_death(domain):
            self.replace(domain, cause, task)
        self.redo(task, cause)

    def run(self) -> None:
        """Until nothing is to do, running or outstanding: dispatch, take an arrival, check the overdue."""
        try:
            while self.todo or self.running or self.outstanding():
                self.dispatch()
                if not (self.running or self.outstanding()):
                    continue
                try:
                    arrival: cf.Future[_V] | None = self.arrived.get(timeout=self.poll)
                except queues.Empty:
                    arrival = None
                if arrival is not None:
                    task = self.running.pop(arrival, None)
                    if task is None:
                        self.stray(arrival)
                    else:
                        self.released(arrival)
                        error = arrival.exception()
                        if error is None:
                            self.accept(task, arrival.result())
                        elif self.is_lost(error):
                            self.lost(task, task.domain, error)
                        else:
                            failure = self.failed(task, error)
                            if failure is error:
                                raise error
                            raise failure from error
                self.overdue()
        except Exception:
            self.abandon(list(self.running))
            raise
        except BaseException:  # Ctrl-C, SystemExit
            self.interrupted(list(self.running))
            raise


class _PoolLoop(TaskLoop[Outcome]):
    """:class:`PoolExecutor`'s generation: sets of rows on its workers, with its timeout rules."""

    def __init__(self, pool: PoolExecutor, shared: Shared, parts: list[Rows]):
        super().__init__(RetryRule(pool.max_retries, pool.died),  # each dead worker or pool counted once
                         None if pool.timeout is None else max(0.01, min(0.5, pool.timeout / 10)))
        self.pool, self.shared = pool, shared
        self.todo.extend(Task(rows) for rows in parts)
        self.done: list[tuple[Rows, EvalResult]] = []
        self.worst: list[Rows] = []  # rows that hung and score worst
        self.killed: list[object] = []  # workers we killed for a timeout
        self.dying: set[cf.Future[Outcome]] = set()  # tasks given up as hung, whose worker's end we wait to see
        self.failure: EvaluationError | None = None  # a hung row with on_timeout="error": raised at the end

    def outstanding(self) -> bool:
        return bool(self.dying)

    def dispatch(self) -> None:
        pool = self.pool
        if self.failure is not None:
            self.todo.clear()  # finish what runs (the killed workers are seen gone), then raise
        # After a kill, nothing more goes to that worker's pool until its end has been seen
        # (all its tasks came back), so no task lands on a pool about to break.
        held = bool(self.dying) or (bool(self.killed) and any(
            any(t.domain is k for k in self.killed) for t in self.running.values()))
        while self.todo and not held and pool._has_room():
            task = self.todo.popleft()
            pool.stats.tasks += 1
            try:
                future, task.domain = pool._submit(self.shared, task.rows)
            except WorkerLost as exc:
                task.domain = exc.domain
                self.lost(task, exc.domain, exc.cause)
                continue
            self.start(future, task)

    def accept(self, task: Task, value: Outcome) -> None:
        self.pool._received(value)
        result, meta = decode_outcome(value, task.rows, self.pool.name)
        self.pool.stats.record(meta)
        self.done.append((task.rows, result))

    def is_lost(self, error: BaseException) -> bool:
        return self.pool._is_lost(error)

    def failed(self, task: Task, error: BaseException) -> BaseException:
        return self.pool._could_not_run(task.rows, error)

    def _ours(self, domain: object) -> bool:
        return any(k is domain for k in self.killed)

    def replace(self, domain: object, cause: BaseException, task: Task) -> None:
        if not self._ours(domain):
            self.pool.stats.worker_failures += 1
        outstanding = [task.rows] + [t.rows for t in self.todo] + [t.rows for t in self.running.values()]
        self.pool._replace(domain, cause, outstanding)

    def redo(self, task: Task, cause: BaseException) -> None:
        self.pool.stats.resubmitted += 1
        if not self._ours(task.domain):  # tasks that died with a worker we killed run again without counting
            task.attempt += 1
            failed = self.retries.give_up(task.rows, task.attempt, cause)
            if failed is not None:
                raise failed from cause
        self.todo.appendleft(task)

    def released(self, future: cf.Future[Outcome]) -> None:
        self.pool._released(future)

    def stray(self, future: cf.Future[Outcome]) -> None:
        self.dying.discard(future)

    def overdue(self) -> None:
        pool = self.pool
        if pool.timeout is None:
            return
        for future in pool._overdue(list(self.running)):
            task = self.running.pop(future)
            self.released(future)
            self.dying.add(future)
            pool.stats.timeouts += 1
            self.killed.append(task.domain)
            if len(task.rows) > 1:  # find the hung rows: one row per task
                singles = [Task(rows, task.attempt) for rows in task.rows.singles()]
                self.todo.extendleft(reversed(singles))
                pool.stats.resubmitted += len(singles)
            elif pool.on_timeout == "error":
                self.failure = self.failure or evaluation_timeout_error(task.rows, pool.timeout)
            else:
                self.worst.append(task.rows)

    def abandon(self, running: list[cf.Future[Outcome]]) -> None:
        self.pool._abandon(running)

    def interrupted(self, running: list[cf.Future[Outcome]]) -> None:
        # Not abandon then interrupt: a process pool's future cancelled just before its workers
        # are killed makes Python 3.11's manager thread print an InvalidStateError traceback.
        self.pool._interrupted(running)


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
        loop = _PoolLoop(self, shared, parts)
        loop.run()
        if loop.failure is not None:
            raise loop.failure
        return loop.done, loop.worst
