"""The one submit/collect/retry loop (blackbox.executors.pool): rows in any grouping give the serial
results bit for bit, lost workers are retried and counted once, hung rows are isolated, and the
byte counts are the payloads' sizes."""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import pickle

import numpy as np
import pytest

import blackbox as bb
from blackbox.core.problem import EvalResult
from blackbox.core.seeding import evaluation_seeds
from blackbox.errors import StateError
from blackbox.executors.futures import FuturesExecutor
from blackbox.executors.loky import LokyExecutor
from blackbox.executors.pool import PoolExecutor, RetryRule, Task, TaskLoop, WorkerLost
from blackbox.executors.serial import SerialExecutor
from blackbox.executors.worker import WorkerCache, decode_outcome, evaluate_task
from tests.helpers.executor_problems import Stateful

STATE = {"count": 3, "mean": np.array([0.5, -0.25, 1.0])}


def generation(popsize: int = 10):
    """A mirrored generation with the center row, its seeds, and the serial executor's result."""
    problem = Stateful(6)
    es = bb.make_strategy("openai-es", dim=6, popsize=popsize, sigma=0.1, seed=7)
    batch = es.ask().with_center(es.center)
    seeds = evaluation_seeds(11, 0, batch.groups)
    with SerialExecutor() as serial:
        serial.start(problem)
        want = serial.evaluate(batch, seeds, STATE)
    return problem, batch, seeds, want


def assert_same_result(got, want):
    assert np.array_equal(got.fitness.view(np.int64), want.fitness.view(np.int64))
    assert np.array_equal(got.steps, want.steps)
    assert got.info.keys() == want.info.keys()
    for key in want.info:
        assert np.array_equal(got.info[key], want.info[key]), key


MID_PAIR = [[0, 3, 10], [1, 4, 6], [2, 5, 7, 9], [8]]  # every mirrored pair cut in two, the center with row 0


@pytest.mark.parametrize("make", [
    lambda: LokyExecutor(workers=2),
    lambda: FuturesExecutor(kind="thread", workers=3),
    lambda: FuturesExecutor(kind="process", workers=2),
], ids=["loky", "futures-thread", "futures-process"])
def test_rows_split_mid_pair_give_the_serial_result(make):
    problem, batch, seeds, want = generation()
    with make() as executor:
        executor.start(problem)
        shared, parts = batch.split(MID_PAIR, seeds=seeds, state=STATE)
        assert_same_result(executor.run(shared, parts), want)
        shared, parts = batch.split([[i] for i in range(len(batch))][::-1], seeds=seeds, state=STATE)
        assert_same_result(executor.run(shared, parts), want)  # one row per task, handed out last first


class Scattered(FuturesExecutor):
    """Hands out every generation's rows by row number modulo 3: mirrored pairs always split."""

    def evaluate(self, population, seeds, state=None):
        index = np.arange(len(population))
        shared, parts = population.split([index[index % 3 == k] for k in range(3)], seeds=seeds, state=state)
        return self.run(shared, parts)


@pytest.mark.parametrize("name", ["openai-es", "ga"])
def test_a_run_with_pairs_split_across_workers_matches_serial(name):
    def run(executor):
        strategy = bb.make_strategy(name, dim=6, popsize=12, seed=7)
        return bb.optimize(strategy, Stateful(6), executor, generations=4, seed=11)

    want = run("serial")
    with Scattered(kind="thread", workers=3) as executor:
        got = run(executor)
    assert [r.as_dict() | {"time": 0, "generation_time": 0} for r in got.records] == \
        [r.as_dict() | {"time": 0, "generation_time": 0} for r in want.records]
    assert np.array_equal(got.center, want.center)


def test_byte_counts_are_the_payloads():
    problem, batch, seeds, _ = generation(popsize=16)
    rows = len(batch)
    with LokyExecutor(workers=2, chunks_per_worker=2) as executor:
        executor.start(problem)
        executor.evaluate(batch, seeds, STATE)
        stats = executor.stats
    assert stats.tasks == 4 and stats.task_bytes == 33 * rows  # consecutive rows: 33 bytes each
    assert stats.result_bytes == rows * (8 + 8 + 3 * 8 + 8)  # fitness, steps, info obs (3) and count
    shared = batch.split(1, state=STATE)[0]
    assert shared.nbytes == 6 * 8 + 8 + (5 + 8) + (4 + 3 * 8)  # the center, sigma, the two state entries
    assert 1 <= stats.broadcast_reads <= 2 and stats.broadcast_read_bytes == stats.broadcast_reads * shared.nbytes
    assert shared.nbytes < stats.broadcast_bytes < shared.nbytes + 2048  # the shared-memory file


def test_outcomes_are_pickled_once_as_objects():
    problem, batch, seeds, want = generation()
    shared, (rows,) = batch.split(1, seeds=seeds, state=STATE)
    token, payload = "t", pickle.dumps(problem)
    outcome = evaluate_task(WorkerCache(), token, rows, lambda: pickle.loads(payload), lambda: shared, key=1)
    assert outcome.status == "ok" and outcome.nbytes == len(batch) * 48
    back = pickle.loads(pickle.dumps(outcome))  # one pickle: no bytes inside
    assert not any(isinstance(v, bytes) for v in vars(back).values())
    assert_same_result(back.result, want)


# -- the loop itself, with a transport that fails on cue --------------------------------------------
class Lost(Exception):
    pass


class Scripted(PoolExecutor):
    """Evaluates in this thread; ``die`` names (first row, try) pairs whose worker dies."""

    name = "scripted"

    def __init__(self, die=(), hang=(), timeout=None, on_timeout="error", max_retries=3, chunks=3):
        super().__init__()
        self.die, self.hang, self.chunks = set(die), set(hang), chunks
        self.timeout, self.on_timeout, self.max_retries = timeout, on_timeout, max_retries
        self.tries: dict[int, int] = {}
        self.pool = 0  # a new "pool" after each death
        self.cache = WorkerCache()
        self.hung: list[cf.Future] = []

    def start(self, problem):
        super().start(problem)
        self.payload = pickle.dumps(problem)

    def _chunks(self, rows):
        return self.chunks

    def _submit(self, shared, rows):
        first = int(rows.index[0])
        attempt = self.tries[first] = self.tries.get(first, 0) + 1
        future: cf.Future = cf.Future()
        if (first, attempt) in self.die:
            self.pool += 1
            future.set_exception(Lost(f"worker of rows {rows.spans()} died"))
            return future, self.pool - 1
        if len(rows) > 1 and any(i in self.hang for i in rows.index) or int(rows.index[0]) in self.hang:
            self.hung.append(future)  # never finishes until _overdue kills it
            return future, self.pool
        future.set_result(evaluate_task(self.cache, "t", rows, lambda: pickle.loads(self.payload),
                                        lambda: shared, key=shared.number))
        return future, self.pool

    def _is_lost(self, error):
        return isinstance(error, Lost)

    def _overdue(self, running):
        late = [f for f in running if f in self.hung]
        for future in late:
            self.hung.remove(future)
            future.set_exception(Lost("killed for the timeout"))
        return late


def test_lost_workers_rerun_their_rows_counted_once_per_worker():
    problem, batch, seeds, want = generation()
    with Scripted(die=[(0, 1), (4, 1), (4, 2)]) as executor:
        executor.start(problem)
        assert_same_result(executor.evaluate(batch, seeds, STATE), want)
        assert executor.stats.worker_failures == 3 and executor.stats.resubmitted == 3
        assert executor.stats.tasks == 6


def test_retries_give_up_with_the_message_naming_rows_and_attempts():
    problem, batch, seeds, _ = generation()
    with Scripted(die=[(4, k) for k in range(1, 4)], max_retries=2) as executor:
        executor.start(problem)
        with pytest.raises(bb.errors.WorkerError, match=r"rows 4\.\.7 were in flight when a worker died 3 times "
                                                 r"\(max_retries=2\); last failure: worker of rows 4\.\.7 died"):
            executor.evaluate(batch, seeds, STATE)


@pytest.mark.parametrize("on_timeout", ["error", "worst"])
def test_hung_rows_are_isolated_one_by_one(on_timeout):
    problem, batch, seeds, want = generation()
    with Scripted(hang=[6], timeout=1.0, on_timeout=on_timeout) as executor:
        executor.start(problem)
        if on_timeout == "error":
            with pytest.raises(bb.errors.EvaluationError, match=f"row 6 \\(seed {seeds[6]}\\) did not finish within "
                                                         "the timeout of 1 s"):
                executor.evaluate(batch, seeds, STATE)
        else:
            got = executor.evaluate(batch, seeds, STATE)
            expected = want.fitness.copy()
            expected[6] = -np.inf
            assert np.array_equal(got.fitness, expected) and got.steps[6] == 0
            assert np.all(got.info["obs"][6] == 0) and np.array_equal(np.delete(got.steps, 6), np.delete(want.steps, 6))
        assert executor.stats.timeouts == 2  # the chunk 4..7, then row 6 alone
        assert executor.stats.worker_failures == 0  # we killed them: no attempt counted


def test_rows_of_a_pool_you_passed_in_are_not_retried():
    class Breaks(cf.ThreadPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            future: cf.Future = cf.Future()
            future.set_exception(cf.BrokenExecutor("a worker went away"))
            return future

    problem, batch, seeds, _ = generation()
    with Breaks(1) as pool:
        executor = FuturesExecutor(pool, workers=1, chunks_per_worker=2)
        executor.start(problem)
        with pytest.raises(bb.errors.WorkerError, match=r"the executor you passed \(Breaks\) broke while evaluating rows "
                                                 r"0\.\.10: a worker went away\. Pass a new one"):
            executor.evaluate(batch, seeds, STATE)
        executor.close()


def test_worker_lost_on_submit_is_retried():
    calls = itertools.count()

    class RefusesOnce(Scripted):
        def _submit(self, shared, rows):
            if next(calls) == 0:
                raise WorkerLost("old pool", RuntimeError("cannot schedule new futures after shutdown"))
            return super()._submit(shared, rows)

    problem, batch, seeds, want = generation()
    with RefusesOnce() as executor:
        executor.start(problem)
        assert_same_result(executor.evaluate(batch, seeds, STATE), want)
        assert executor.stats.worker_failures == 1 and executor.stats.resubmitted == 1


def test_row_sets_on_request_through_the_public_api_give_the_serial_result():
    # what the ray plugin's node does: publish, submit row sets as it picks them, decode, retract
    from loky.process_executor import BrokenProcessPool

    problem, batch, seeds, want = generation()
    shared, parts = batch.split(MID_PAIR, seeds=seeds, state=STATE)
    with LokyExecutor(workers=2) as executor:
        with pytest.raises(StateError):
            executor.submit_rows(shared, parts[0])
        executor.start(problem)
        executor.publish(shared)
        try:
            started = [(rows, executor.submit_rows(shared, rows)[0]) for rows in parts]
            results = [(rows.index, decode_outcome(future.result(timeout=120), rows, "loky")[0])
                       for rows, future in started]
        finally:
            executor.retract(shared)
        order = np.argsort(np.concatenate([index for index, _ in results]))
        joined = EvalResult.concatenate([result for _, result in results])
        got = EvalResult(joined.fitness[order], joined.steps[order], {k: v[order] for k, v in joined.info.items()})
        assert_same_result(got, want)
        assert not executor.is_lost(ValueError("an evaluation error, not a lost worker"))
        assert executor.is_lost(BrokenProcessPool("a worker died"))


def test_the_retry_rule_counts_a_dead_pool_once_and_gives_up_past_max_retries():
    problem, batch, seeds, want = generation()
    rows = batch.split([[4, 5, 6, 7]], seeds=seeds)[1][0]
    rule = RetryRule(2)
    pool = object()
    assert rule.first_death(pool) and not rule.first_death(pool) and rule.first_death(object())
    assert rule.give_up(rows, 2, RuntimeError("broken")) is None
    error = rule.give_up(rows, 3, RuntimeError("broken"))
    assert isinstance(error, bb.errors.WorkerError)
    assert str(error) == "rows 4..7 were in flight when a worker died 3 times (max_retries=2); last failure: broken"


class _Lost(Exception):
    """What the fake workers below raise when they go away."""


class _Loop(TaskLoop):
    """A TaskLoop over fake workers: each task's future is completed by ``complete``, as workers do."""

    def __init__(self, tasks, poll=None):
        super().__init__(RetryRule(3), poll)
        self.todo.extend(tasks)
        self.started, self.accepted, self.replaced, self.abandoned = [], [], [], []
        self.overdue_checks = 0
        self.complete = lambda future, task: None  # set by each test

    def dispatch(self):
        while self.todo:
            task = self.todo.popleft()
            future: cf.Future = cf.Future()
            self.started.append(task.rows)
            self.start(future, task)
            self.complete(future, task)

    def accept(self, task, value):
        self.accepted.append((task.rows, value))

    def is_lost(self, error):
        return isinstance(error, _Lost)

    def replace(self, domain, cause, task):
        self.replaced.append(domain)

    def overdue(self):
        self.overdue_checks += 1

    def abandon(self, running):
        self.abandoned.extend(running)


def test_the_task_loop_replaces_a_lost_worker_once_and_redoes_each_of_its_tasks():
    # the loop the Ray driver shares with PoolExecutor: two tasks die with one worker, which is
    # replaced once; both run again on the next worker and each result is accepted once
    loop = _Loop([Task("a", domain="w1"), Task("b", domain="w1")])

    def complete(future, task):
        if len(loop.started) <= 2:
            future.set_exception(_Lost("w1 went away"))
        else:
            task.domain = "w2"
            future.set_result(task.rows.upper())

    loop.complete = complete
    loop.run()
    assert loop.replaced == ["w1"]
    assert loop.started == ["a", "b", "a", "b"]  # each redone as soon as its loss arrives
    assert sorted(loop.accepted) == [("a", "A"), ("b", "B")]
    assert loop.overdue_checks == 4 and not loop.running


def test_the_task_loop_raises_a_failure_to_run_and_abandons_what_runs():
    loop = _Loop([Task("a"), Task("b")])
    pending: list[cf.Future] = []

    def complete(future, task):
        if task.rows == "a":
            future.set_exception(ValueError("row a failed"))
        else:
            pending.append(future)  # still running when a fails

    loop.complete = complete
    with pytest.raises(ValueError, match="row a failed"):
        loop.run()
    assert loop.abandoned == pending and loop.replaced == []


def test_the_task_loop_checks_the_overdue_every_poll_while_it_waits():
    loop = _Loop([Task("a")], poll=0.01)
    checks: list[int] = []

    def overdue():  # gives the task up after a few polls, as a heartbeat or a timeout does
        checks.append(1)
        if len(checks) == 3:
            future = next(iter(loop.running))
            del loop.running[future]

    loop.overdue = overdue
    loop.run()
    assert len(checks) == 3 and loop.accepted == [] and not loop.running
