"""The Executor protocol, and the row-evaluation routine every executor runs in its workers.

An executor owns its workers for the length of a run: ``start(problem)`` ships the problem once,
``evaluate(population, seeds, state)`` scores a population and returns results in row order,
``close()`` releases the workers. Executors are context managers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..errors import BlackboxError, EvaluationError, StateError
from .population import Population
from .problem import EvalResult, Problem, check_eval_result

__all__ = ["Executor", "Submitted", "evaluate_rows", "default_batch_size"]

# Rows are materialized in batches of at most this many float64 values (128 MB).
_MAX_BATCH_VALUES = 2**24


def default_batch_size(dim: int) -> int:
    """How many rows of ``dim`` parameters to materialize at once."""
    return max(1, _MAX_BATCH_VALUES // max(int(dim), 1))


def evaluate_rows(
    problem: Problem, population: Population, seeds: np.ndarray, *, batch_size: int | None = None,
    index: np.ndarray | None = None,
) -> EvalResult:
    """Evaluate every row of ``population`` with ``problem``, ``batch_size`` rows at a time.

    ``index`` holds each row's number in the whole generation (default 0, 1, ...), so that an
    error can name the row when a worker evaluates only some rows. When a batch raises, its rows
    are evaluated one by one to find the row that fails; the EvaluationError names that row and
    its seed and chains the cause.
    """
    m = len(population)
    batch = batch_size or default_batch_size(population.dim)
    parts = []
    for start in range(0, m, batch):
        rows = np.arange(start, min(start + batch, m))
        params = population.rows(rows)
        try:
            result = problem.evaluate(params, seeds[rows])
        except BlackboxError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported
            at, seed, cause = _locate_failure(problem, params, seeds[rows], exc)
            row = start + at if index is None else int(index[start + at])
            raise EvaluationError(
                f"evaluation of row {row} (seed {seed}) failed: {type(cause).__name__}: {cause}",
                row=row, seed=seed,
            ) from cause
        parts.append(check_eval_result(result, len(rows)))
    return EvalResult.concatenate(parts)


def _locate_failure(problem: Problem, params: np.ndarray, seeds: np.ndarray, exc: Exception):
    """Re-run rows one at a time; return (row, seed, exception) of the first that raises."""
    if len(params) > 1:
        for i in range(len(params)):
            try:
                problem.evaluate(params[i : i + 1], seeds[i : i + 1])
            except Exception as single:  # noqa: BLE001
                return i, int(seeds[i]), single
    return 0, int(seeds[0]), exc


class Submitted(ABC):
    """A generation handed to an executor by :meth:`Executor.submit`; ``result()`` gives what
    ``evaluate`` gives. An executor that runs generations in the background returns its own kind."""

    @abstractmethod
    def result(self) -> EvalResult:
        """The generation's scores, in row order (waits for them)."""


class _Deferred(Submitted):
    """The default :class:`Submitted`: evaluated when ``result()`` is called."""

    def __init__(self, executor: Executor, population: Population, seeds: np.ndarray, state: dict[str, Any] | None):
        self.executor, self.population, self.seeds, self.state = executor, population, seeds, state

    def result(self) -> EvalResult:
        return self.executor.evaluate(self.population, self.seeds, self.state)


class Executor(ABC):
    """Base class of executors: start, evaluate in row order, close."""

    name = ""

    def __init__(self) -> None:
        self.problem: Problem | None = None

    @property
    def workers(self) -> int:
        """How many rows can be evaluated at the same time."""
        return 1

    def start(self, problem: Problem) -> None:
        """Take the problem for this run (ship it to the workers once)."""
        self.problem = problem

    @abstractmethod
    def evaluate(
        self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None
    ) -> EvalResult:
        """Scores of every row of ``population``, in row order; ``state`` is the problem's."""

    def submit(self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None) -> Submitted:
        """Hand a generation over; its ``result()`` is what :meth:`evaluate` returns. The pipelined
        mode submits generation g+1 before it collects g: an executor that can run both at once
        (the Ray cluster executor) starts it now; by default it is evaluated when collected."""
        return _Deferred(self, population, seeds, state)

    def bind(self, strategy: Any) -> None:
        """The strategy the run drives (``optimize`` calls it after ``start``, and with None when the
        run is over). An executor that can take over the noise-weighted sums of ``tell`` (the Ray
        cluster executor) sets ``strategy.reducer`` here and restores it on ``bind(None)``; the sums
        it returns must have the bits of the strategy's own reduction. Default: nothing."""

    def close(self) -> None:
        """Release workers; the executor can be started again afterwards."""
        self.problem = None

    def _require_started(self) -> Problem:
        if self.problem is None:
            raise StateError(f"{type(self).__name__}.evaluate() called before start(problem)")
        return self.problem

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
