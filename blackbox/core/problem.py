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
strategy a run takes when the user names none).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import EvaluationError

__all__ = ["Problem", "EvalResult", "check_eval_result", "Scorable", "Playable", "Recommends", "ChoosesStrategy",
           "TrainsOnShiftedRewards"]


@dataclass
class EvalResult:
    """Scores of ``m`` rows: ``fitness`` (higher is better), environment ``steps``, and ``info``.

    ``info`` maps names to arrays whose first axis has one entry per row; executors concatenate
    them in row order, so any statistic reduced from them does not depend on how rows were split.
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


def check_eval_result(result: Any, m: int, where: str = "problem.evaluate") -> EvalResult:
    """Validate what a problem returned for ``m`` rows, with an EvaluationError saying what is off."""
    if not isinstance(result, EvalResult):
        raise EvaluationError(f"{where} must return an EvalResult, got {type(result).__name__}")
    fitness = np.asarray(result.fitness, dtype=np.float64)
    steps = np.asarray(result.steps, dtype=np.int64)
    if fitness.shape != (m,) or steps.shape != (m,):
        raise EvaluationError(
            f"{where} returned fitness of shape {fitness.shape} and steps of shape {steps.shape} "
            f"for {m} rows; expected ({m},) each"
        )
    for key, value in result.info.items():
        if len(value) != m:
            raise EvaluationError(f"{where} returned info[{key!r}] with {len(value)} entries for {m} rows")
    return EvalResult(fitness, steps, dict(result.info))


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
