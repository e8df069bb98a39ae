"""Checks every executor passes: row order, bit-identical results to the serial executor, the
problem's state reaching the workers, errors surfacing as EvaluationError naming the row, and a
whole run matching the serial one.

They use :class:`~blackbox.testing.fixtures.ProbeProblem` (importable by any worker) and both dense
populations and compact ones (noise-table offsets, several parents, mirrored pairs, the center).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.executor import Executor
from ..core.noise import NoiseTable
from ..core.population import Population
from ..core.problem import EvalResult, Problem
from ..errors import EvaluationError, StateError
from ..executors.serial import SerialExecutor
from .fixtures import FAIL_MARK, ProbeProblem
from .subject import Subject, fail, register_check, same_result

if TYPE_CHECKING:
    from ..driver.loop import Result

__all__: list[str] = []

check = register_check("executor")

DIM = 6
SIZES = (1, 2, 5, 33)


def dense_population(m: int, seed: int = 0) -> Population:
    rng = np.random.default_rng(seed)
    return Population.from_dense(rng.standard_normal((m, DIM)))


def compact_population(m: int, seed: int = 0) -> Population:
    """Mirrored pairs around three parents, read from a small noise table, and the center last."""
    rng = np.random.default_rng(seed)
    table = NoiseTable.get(2**16, seed=7)
    n = max(m - 1, 1)
    offsets = np.repeat(table.sample_offsets(rng, (n + 1) // 2, DIM), 2)[:n]
    signs = np.tile(np.array([1, -1], dtype=np.int8), (n + 1) // 2)[:n]
    bases = rng.standard_normal((3, DIM))
    parents = rng.integers(0, 3, size=n)
    groups = np.arange(n, dtype=np.int64) // 2
    population = Population.compact(table, bases, offsets, signs, 0.3, parents=parents, groups=groups)
    return population.with_center(bases[0]) if m > 1 else population


def seeds_for(m: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 100).integers(0, 2**32, size=m, dtype=np.int64)


def serial_result(problem: Problem, population: Population, seeds: np.ndarray,
                  state: dict[str, Any] | None = None) -> EvalResult:
    with SerialExecutor() as serial:
        serial.start(problem)
        return serial.evaluate(population, seeds, state)


@contextmanager
def started(subject: Subject, problem: Problem) -> Iterator[Executor]:
    executor = subject.make_executor()
    executor.start(problem)
    try:
        yield executor
    finally:
        executor.close()


def expect_like_serial(executor: Executor, problem: Problem, population: Population, seeds: np.ndarray,
                       state: dict[str, Any] | None, what: str) -> None:
    got = executor.evaluate(population, seeds, state)
    if not isinstance(got, EvalResult):
        raise fail(f"{what}: evaluate() must return an EvalResult, got {type(got).__name__}")
    if len(got.fitness) != len(population):
        raise fail(f"{what}: {len(got.fitness)} results for {len(population)} rows")
    want = serial_result(problem, population, seeds, state)
    diff = same_result(want, got)
    if diff:
        if set(want.info) == set(got.info) and not np.array_equal(want.fitness, got.fitness):
            order = [int(np.flatnonzero(want.fitness == f)[0]) if np.any(want.fitness == f) else -1
                     for f in got.fitness]
            if sorted(order) == list(range(len(order))) and order != list(range(len(order))):
                raise fail(f"{what}: results come back out of row order (rows {order[:8]}...)")
        raise fail(f"{what}: results differ from the serial executor's: {diff}")


@check
def check_evaluate_before_start(subject: Subject) -> None:
    """evaluate() before start(problem) raises StateError."""
    executor = subject.make_executor()
    try:
        executor.evaluate(dense_population(2), seeds_for(2))
    except StateError:
        return
    except Exception as exc:  # noqa: BLE001
        raise fail(f"evaluate() before start() raised {type(exc).__name__} ({exc}); expected StateError") from exc
    finally:
        executor.close()
    raise fail("evaluate() before start() did not raise; expected StateError")


@check
def check_order_kept(subject: Subject) -> None:
    """Results come back in row order, for more and for fewer rows than workers."""
    problem = ProbeProblem(DIM)
    with started(subject, problem) as executor:
        for m in SIZES:
            expect_like_serial(executor, problem, dense_population(m, m), seeds_for(m, m), None,
                               f"{m} dense rows")


@check
def check_same_as_serial(subject: Subject) -> None:
    """Compact and dense populations give bit-identical fitness, steps and info to the serial executor."""
    problem = ProbeProblem(DIM)
    with started(subject, problem) as executor:
        for m in SIZES:
            expect_like_serial(executor, problem, compact_population(m, m), seeds_for(m, m), None,
                               f"{m} compact rows")
            expect_like_serial(executor, problem, dense_population(m, m + 1), seeds_for(m, m + 1), None,
                               f"{m} dense rows")


@check
def check_state_reaches_workers(subject: Subject) -> None:
    """The problem state passed to evaluate() is what every row is scored under, each call anew."""
    problem = ProbeProblem(DIM)
    with started(subject, problem) as executor:
        for offset in (5.0, -2.0, 0.25):
            state = {"offset": offset}
            expect_like_serial(executor, problem, dense_population(9), seeds_for(9), state,
                               f"state offset={offset}")


@check
def check_errors_surface(subject: Subject) -> None:
    """An evaluation that raises surfaces as EvaluationError naming the row and seed; the executor goes on."""
    problem = ProbeProblem(DIM, fail_on_mark=True)
    m, bad = 11, 8
    population = dense_population(m)
    population.params[bad, 0] = FAIL_MARK
    seeds = seeds_for(m)
    with started(subject, problem) as executor:
        try:
            executor.evaluate(population, seeds)
        except EvaluationError as exc:
            if exc.row != bad or exc.seed != int(seeds[bad]):
                raise fail(f"EvaluationError names row {exc.row} and seed {exc.seed}; "
                           f"the failing row is {bad} with seed {seeds[bad]}") from exc
            if f"row {bad}" not in str(exc) or "ValueError" not in str(exc):
                raise fail(f"EvaluationError's message must name row {bad} and the cause (ValueError): {exc}") from exc
        except Exception as exc:  # noqa: BLE001
            raise fail(f"a failing evaluation surfaced as {type(exc).__name__} ({exc}); "
                       f"expected blackbox.EvaluationError naming row {bad}") from exc
        else:
            raise fail(f"row {bad} raises in problem.evaluate but executor.evaluate() did not raise")
        expect_like_serial(executor, problem, dense_population(7), seeds_for(7), None,
                           "the first evaluation after an error")


@check
def check_close_and_restart(subject: Subject) -> None:
    """An executor closed after a run can start again; as a context manager it closes itself."""
    problem = ProbeProblem(DIM)
    executor = subject.make_executor()
    with executor:
        executor.start(problem)
        expect_like_serial(executor, problem, dense_population(4), seeds_for(4), None, "first start")
    try:
        executor.evaluate(dense_population(2), seeds_for(2))
    except StateError:
        pass
    except Exception as exc:  # noqa: BLE001
        raise fail(f"evaluate() after close() raised {type(exc).__name__}; expected StateError") from exc
    else:
        raise fail("evaluate() after the with-block (close) did not raise StateError")
    executor.start(problem)
    try:
        expect_like_serial(executor, problem, dense_population(4, 1), seeds_for(4, 1), None, "second start")
    finally:
        executor.close()


@check
def check_run_matches_serial(subject: Subject) -> None:
    """optimize() with this executor gives the same records and center as with the serial one, bit for bit."""
    from ..driver.loop import optimize
    from ..registry.plugins import make_strategy

    def run(executor: Executor) -> Result:
        strategy = make_strategy("openai-es", dim=DIM, popsize=10, seed=3, x0=np.full(DIM, 0.5))
        return optimize(strategy, ProbeProblem(DIM), executor, generations=4, seed=9)

    reference = run(SerialExecutor())
    executor = subject.make_executor()
    try:
        result = run(executor)
    finally:
        executor.close()
    for want, got in zip(reference.records, result.records):
        for key in ("best", "mean", "median", "worst", "center", "steps", "update_norm"):
            if getattr(want, key) != getattr(got, key):
                raise fail(f"generation {want.generation}: {key} is {getattr(got, key)!r}, "
                           f"with the serial executor {getattr(want, key)!r}")
    if not np.array_equal(reference.center, result.center):
        raise fail("the final center differs from the serial run's")
