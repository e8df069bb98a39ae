"""The Problem protocol: a small picklable recipe that scores parameter vectors in batches.

``evaluate(params (m, dim), seeds (m,)) -> EvalResult`` scores a slice of a population. Heavy
things (environments, datasets, networks) are built lazily inside the process that evaluates, so
shipping a problem to a worker is cheap. A problem may carry state that the driver folds in after
each generation (``observe``) and syncs to every worker with the center (``state_dict`` /
``load_state_dict``), such as observation-normalization statistics.

Optional capabilities are declared as protocols, so that code which needs one checks for it with
``isinstance`` and a type checker knows the signature: :class:`Scorable` (``score``: returns of
fresh episodes; goal confirmation and ``blackbox play`` use it), :class:`Playable` (``play``: one
rendered episode), :class:`TrainsOnShiftedRewards` (``training_goal``: where the training fitness
is not the score), and, on a problem's class or factory, :class:`Recommends` (``recommended``: the
preset ``blackbox run`` applies) and :class:`ChoosesStrategy` (``recommended_strategy``: the
strategy a run takes when the user names none). :class:`EvaluatesPopulations`
(``evaluate_population``) marks a problem that takes a worker's rows as the population itself
(compact: noise offsets), to expand them where it computes (an accelerator) instead of receiving
dense float64 rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from .._validate import real_array, step_counts
from ..errors import EvaluationError

if TYPE_CHECKING:
    from .population import Population

__all__ = ["Problem", "EvalResult", "PARTIAL", "check_eval_result", "Scorable", "Playable", "Recommends",
           "ChoosesStrategy",
           "TrainsOnShiftedRewards", "EvaluatesPopulations"]


#: The ``EvalResult.info`` name of rows whose fitness is partial (see :class:`EvalResult`).
PARTIAL = "partial"


@dataclass
class EvalResult:
    """Scores of ``m`` rows: ``fitness`` (higher is better), environment ``steps``, and ``info``.

    ``info`` maps names to arrays whose first axis has one entry per row; executors concatenate
    them in row order, so any statistic reduced from them does not depend on how rows were split.
    The driver reads one name itself, :data:`PARTIAL` (bool per row): rows whose fitness is on a
    shorter scale than the others' (a gym problem's episodes cut by a fixed cap while the center row
    played whole ones); the run's best row is picked among the other rows.
    """

    fitness: np.ndarray
    steps: np.ndarray
    info: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.fitness)

    @staticmethod
    def concatenate(parts: list[EvalResult]) -> EvalResult:
        """Join results of consecutive row chunks, in order."""
        if not parts:
            return EvalResult(np.zeros(0), np.zeros(0, dtype=np.int64))
        keys = parts[0].info.keys()
        for part in parts[1:]:
            if part.info.keys() != keys:
                raise EvaluationError(
                    f"problem.evaluate returned info with keys {sorted(map(str, keys))} for some rows and "
                    f"{sorted(map(str, part.info.keys()))} for others; return the same keys for every row"
                )
        return EvalResult(
            fitness=np.concatenate([p.fitness for p in parts]),
            steps=np.concatenate([p.steps for p in parts]),
            info={k: np.concatenate([p.info[k] for p in parts]) for k in keys},
        )


class Problem(ABC):
    """Base class of problems. Fitness is maximized; test functions return the negated loss."""

    #: Registry name (``"quadratic"``); plugins set their own.
    name = ""
    #: True when every row of a generation must get the same seed (one minibatch for all).
    shared_seed: bool = False
    #: Modules the problem cannot work without -> the extra that installs each (``{"torch": "mnist"}``):
    #: ``blackbox list`` marks the problem unusable where one is missing.
    needs: ClassVar[dict[str, str]] = {}
    dim: int

    @abstractmethod
    def evaluate(self, params: np.ndarray, seeds: np.ndarray) -> EvalResult:
        """Score each row of ``params`` (shape ``(m, dim)``) under its seed; must not modify it."""

    def initial_params(self, rng: np.random.Generator) -> np.ndarray:
        """Where a strategy starts when it is given no ``x0``: a vector of ``dim`` floats drawn from ``rng``.

        The default draws every coordinate from the standard normal N(0, 1), so the start is fixed
        by the run's seed and is never a special point: zeros, the old default, is the optimum of
        many test functions (sphere, rastrigin), and a run that starts at its optimum hides every
        bug. Override it where the problem has a natural start (a policy's initialization, a
        box's centre), and return zeros there explicitly if zeros is what you mean.
        """
        return rng.standard_normal(self.dim)

    # -- state synced by the driver (default: none) -------------------------------------------
    def observe(self, result: EvalResult) -> None:
        """Fold a generation's ``info`` into the problem's state (driver process only)."""

    def state_dict(self) -> dict[str, Any]:
        """State every worker needs each generation, and that a checkpoint keeps."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Install state from ``state_dict()`` (in a worker, or when resuming)."""

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary for run directories and logs."""
        return {"name": self.name or type(self).__name__, "dim": self.dim}


def check_eval_result(result: object, m: int, where: str = "problem.evaluate") -> EvalResult:
    """Validate what a problem returned for ``m`` rows, with an EvaluationError saying what is off.

    Fitness goes through the conversion ``tell()`` uses (:func:`~blackbox._validate.real_array`:
    real numbers, NaN and infinities allowed; None, complex numbers, text and tensors that require
    grad refused), steps must be whole numbers from 0 to ``MAX_STEPS_PER_ROW``, and every ``info``
    value an array with one entry per row. So a value ``tell()`` would refuse is refused here too,
    naming the problem as its source, instead of being converted on the way.
    """
    if not isinstance(result, EvalResult):
        raise EvaluationError(f"{where} must return an EvalResult, got {type(result).__name__}")
    try:
        fitness = real_array(result.fitness)
    except TypeError as exc:
        raise EvaluationError(
            f"{where} returned fitness of type {type(result.fitness).__name__} that is not real numbers ({exc}); "
            f"return one float per row (NaN for a failed row)"
        ) from None
    try:
        steps = step_counts(result.steps)
    except (TypeError, ValueError) as exc:
        raise EvaluationError(f"{where} returned steps that are not step counts: {exc}") from None
    if fitness.shape != (m,) or steps.shape != (m,):
        raise EvaluationError(
            f"{where} returned fitness of shape {fitness.shape} and steps of shape {steps.shape} "
            f"for {m} rows; expected ({m},) each"
        )
    if not isinstance(result.info, dict):
        raise EvaluationError(f"{where} returned info of type {type(result.info).__name__}; expected a dict of "
                              f"arrays with one entry per row")
    info = {}
    for key, value in result.info.items():
        try:
            array = np.asarray(value)
        except Exception as exc:  # noqa: BLE001 - whatever the object's conversion raises, it is refused
            raise EvaluationError(f"{where} returned info[{key!r}] that does not convert to an array: "
                                  f"{type(exc).__name__}: {exc}") from None
        if array.ndim == 0 or len(array) != m:
            got = "a single value" if array.ndim == 0 else f"{len(array)} entries"
            raise EvaluationError(f"{where} returned info[{key!r}] with {got} for {m} rows; "
                                  f"expected one entry per row")
        info[key] = array
    return EvalResult(fitness, steps, info)


# -- optional capabilities ---------------------------------------------------------------------------
@runtime_checkable
class Scorable(Protocol):
    """A problem that scores one parameter vector on fresh episodes (``blackbox play``, ConfirmGoal)."""

    def score(self, params: np.ndarray, episodes: int = 20, seed: int = 0) -> np.ndarray:
        """The returns of ``params`` on ``episodes`` episodes whose seeds derive from ``seed``."""
        ...


@runtime_checkable
class Playable(Protocol):
    """A problem that plays one episode for people to watch (``blackbox play --gif``)."""

    #: The environment's name, as people know it (``"CartPole-v1"``).
    env_id: str

    def play(self, params: np.ndarray, seed: int = 0, render_mode: str | None = None,
             frames: list[Any] | None = None, every: int = 1) -> tuple[float, int]:
        """Return and length of one episode in a fresh environment, rendered into ``frames`` when given
        (the frame after the reset and after every ``every``-th step; ``blackbox play`` also accepts a
        ``play`` without ``every``, and then keeps every ``every``-th frame it rendered)."""
        ...


@runtime_checkable
class Recommends(Protocol):
    """A problem class (or factory) with a preset for ``blackbox run``: ``recommended(*args,
    strategy=..., **options)`` returns ``{"problem": {...}, "strategy": {...}, "run": {...}}``."""

    def recommended(self, *args: Any, strategy: str, **options: Any) -> dict[str, dict[str, Any]]:
        """The settings to fill in for the problem built with ``args``/``options`` and ``strategy``."""
        ...


@runtime_checkable
class ChoosesStrategy(Protocol):
    """A problem class (or factory) whose preset names the strategy a run takes when the user names none."""

    def recommended_strategy(self, *args: Any, **options: Any) -> str | None:
        """The strategy's name for the problem built with ``args``/``options``, or None."""
        ...


@runtime_checkable
class TrainsOnShiftedRewards(Protocol):
    """A problem whose training fitness differs from its score (shifted rewards): the goal check
    screens the training fitness at ``training_goal(goal)`` and confirms with ``score``."""

    def training_goal(self, goal: float) -> float:
        """The training fitness at which the score may have reached ``goal``."""
        ...


@runtime_checkable
class EvaluatesPopulations(Protocol):
    """A problem that scores a population as it comes, compact or dense (the executors' row routine
    hands it the rows a worker got, all at once): it can expand noise offsets on its own device.
    Its result must be what ``evaluate`` gives for the same rows, up to the rounding of its dtype."""

    def evaluate_population(self, population: Population, seeds: np.ndarray) -> EvalResult:
        """Scores of every row of ``population`` under ``seeds`` (one per row), in row order."""
        ...
