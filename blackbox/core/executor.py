"""The Executor protocol, and the row-evaluation routine every executor runs in its workers.

An executor owns its workers for the length of a run: ``start(problem)`` ships the problem once,
``evaluate(population, seeds, state)`` scores a population and returns results in row order,
``close()`` releases the workers. Executors are context managers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BlackboxError, EvaluationError, StateError
from .population import Population
from .problem import EvalResult, EvaluatesPopulations, Problem, check_eval_result
from .row_source import RowSource

if TYPE_CHECKING:
    from .strategy import Strategy

__all__ = ["Executor", "Submitted", "evaluate_rows", "default_batch_size", "RowTimeout", "describe_exception"]

# Rows are materialized in batches of at most this many float64 values (128 MB).
_MAX_BATCH_VALUES = 2**24


def default_batch_size(dim: int) -> int:
    """How many rows of ``dim`` parameters to materialize at once."""
    return max(1, _MAX_BATCH_VALUES // max(int(dim), 1))


class RowTimeout(BaseException):
    """Raised inside ``problem.evaluate`` by a deadline (the serial executor's ``timeout``).

    A BaseException, like KeyboardInterrupt, so that a problem's own ``except Exception`` does not
    swallow it."""

    def __init__(self, seconds: float):
        super().__init__(f"did not finish within the timeout of {seconds:g} s")
        self.seconds = seconds


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` for an error line, even when its ``__str__`` raises; an exit says
    what was called (``sys.exit(0)`` reads as ``SystemExit: 0`` otherwise)."""
    name = type(exc).__name__
    if isinstance(exc, SystemExit):
        return f"{name}: the problem called sys.exit({exc.code!r})"
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the error
        message = "<its message could not be read>"
    return f"{name}: {message}" if message else name


def _no_guard() -> AbstractContextManager[None]:
    return nullcontext()


def evaluate_rows(
    problem: Problem, population: Population, seeds: np.ndarray, *, batch_size: int | None = None,
    index: np.ndarray | None = None, guard: Callable[[], AbstractContextManager[object]] = _no_guard,
) -> EvalResult:
    """Evaluate every row of ``population`` with ``problem``, ``batch_size`` rows at a time (a
    :class:`~blackbox.core.row_source.RowSource` of them where the problem declares ``takes_row_source``).

    ``index`` holds each row's number in the whole generation (default 0, 1, ...), so that an
    error can name the row when a worker evaluates only some rows. When a batch raises, its rows
    are evaluated one by one to find the row that fails; the EvaluationError names that row and
    its seed and chains the cause. Anything a problem raises counts, exits included
    (``sys.exit(0)`` inside ``evaluate`` is an evaluation error, never the end of the program),
    except Ctrl-C. What the problem returns is checked by :func:`check_eval_result`.

    ``guard`` wraps each call of ``problem.evaluate`` (the serial executor's deadline): when it
    raises :class:`RowTimeout` for a batch of several rows, they are evaluated again one per call to
    find the rows that hang; a single row that times out is an EvaluationError naming it.

    A problem that :class:`~.problem.EvaluatesPopulations` gets all the rows in one call, as the
    population (compact where it is); when that call fails, the rows are evaluated one by one
    through ``evaluate`` to name the failing row, as for any problem.
    """
    m = len(population)
    if m and isinstance(problem, EvaluatesPopulations):
        return _evaluate_population(problem, population, seeds, index, guard)
    batch = batch_size or default_batch_size(population.dim)
    parts = []
    for start in range(0, m, batch):
        rows = np.arange(start, min(start + batch, m))
        # a problem that copies each row once (gym's float32 policy slots) reads them lazily
        lazy = getattr(problem, "takes_row_source", False)
        params: Any = RowSource(population, rows) if lazy else population.rows(rows)  # a source only where declared
        try:
            with guard():
                result = problem.evaluate(params, seeds[rows])
        except (KeyboardInterrupt, BlackboxError):
            raise
        except RowTimeout as exc:
            if len(rows) == 1:
                raise _failed(start, index, int(seeds[start]), exc) from None
            parts.extend(_evaluate_singles(problem, params, seeds[rows], start, index, guard))
            continue
        except BaseException as exc:  # noqa: BLE001 - any failure of user code is reported, exits too
            at, seed, cause = _locate_failure(problem, params, seeds[rows], exc, guard)
            raise _failed(start + at, index, seed, cause) from (None if isinstance(cause, RowTimeout) else cause)
        parts.append(_checked(result, rows, index))
    return EvalResult.concatenate(parts)


def _evaluate_population(problem: Any, population: Population, seeds: np.ndarray, index: np.ndarray | None,
                         guard: Callable[[], AbstractContextManager[object]]) -> EvalResult:
    """All rows in one ``evaluate_population`` call; a failure is located row by row as in :func:`evaluate_rows`."""
    rows = np.arange(len(population))
    try:
        with guard():
            result = problem.evaluate_population(population, seeds)
    except (KeyboardInterrupt, BlackboxError):
        raise
    except BaseException as exc:  # noqa: BLE001 - any failure of user code is reported, exits too
        params = population.rows(rows)
        if isinstance(exc, RowTimeout):
            if len(rows) == 1:
                raise _failed(0, index, int(seeds[0]), exc) from None
            return EvalResult.concatenate(_evaluate_singles(problem, params, seeds, 0, index, guard))
        at, seed, cause = _locate_failure(problem, params, seeds, exc, guard)
        raise _failed(at, index, seed, cause) from (None if isinstance(cause, RowTimeout) else cause)
    return _checked(result, rows, index)


def _row_number(at: int, index: np.ndarray | None) -> int:
    return at if index is None else int(index[at])


def _failed(at: int, index: np.ndarray | None, seed: int, cause: BaseException) -> EvaluationError:
    row = _row_number(at, index)
    if isinstance(cause, RowTimeout):
        return EvaluationError(f"evaluation of row {row} (seed {seed}) {cause}; it was interrupted", row=row, seed=seed)
    return EvaluationError(f"evaluation of row {row} (seed {seed}) failed: {describe_exception(cause)}",
                           row=row, seed=seed)


def _checked(result: object, rows: np.ndarray, index: np.ndarray | None) -> EvalResult:
    """:func:`check_eval_result` for ``rows``, its error naming them."""
    try:
        return check_eval_result(result, len(rows))
    except EvaluationError as exc:
        first, last = _row_number(int(rows[0]), index), _row_number(int(rows[-1]), index)
        where = f"row {first}" if len(rows) == 1 else f"rows {first}..{last}"
        raise EvaluationError(f"{exc} (evaluating {where})", row=first) from None


def _evaluate_singles(problem: Problem, params: np.ndarray | RowSource, seeds: np.ndarray, start: int,
                      index: np.ndarray | None, guard: Callable[[], AbstractContextManager[object]]) -> list[EvalResult]:
    """Rows of a batch that timed out, one per call: the results, or the error of the first that fails."""
    parts = []
    for i in range(len(params)):
        try:
            with guard():
                result = problem.evaluate(params[i : i + 1], seeds[i : i + 1])
        except (KeyboardInterrupt, BlackboxError):
            raise
        except BaseException as exc:  # noqa: BLE001 - as in evaluate_rows
            raise _failed(start + i, index, int(seeds[i]), exc) from (None if isinstance(exc, RowTimeout) else exc)
        parts.append(_checked(result, np.array([start + i]), index))
    return parts


def _locate_failure(problem: Problem, params: np.ndarray | RowSource, seeds: np.ndarray, exc: BaseException,
                    guard: Callable[[], AbstractContextManager[object]] = _no_guard) -> tuple[int, int, BaseException]:
    """Re-run rows one at a time; return (row, seed, exception) of the first that raises."""
    if len(params) > 1:
        for i in range(len(params)):
            try:
                with guard():
                    problem.evaluate(params[i : i + 1], seeds[i : i + 1])
            except KeyboardInterrupt:
                raise
            except BaseException as single:  # noqa: BLE001
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

    def bind(self, strategy: Strategy | None) -> None:
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

    def __exit__(self, *exc_info: object) -> None:
        self.close()
