"""Stop conditions for :func:`blackbox.optimize`; each returns a reason string when it fires.

A condition is any callable ``(record) -> str | None``. Conditions see the :class:`Record` of the
generation that just ended, whose counters are cumulative over the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np

from .._validate import check_choice, check_float, check_int
from ..core.problem import Scorable, TrainsOnShiftedRewards
from ..errors import ConfigError, StateError

if TYPE_CHECKING:
    from .loop import Run
    from .record import Record

__all__ = ["StopCondition", "Generations", "Evaluations", "EnvSteps", "WallTime", "TargetFitness", "GoalHeld",
           "ConfirmGoal", "GoalCheck", "Condition", "confirmation_seed", "stop_conditions", "BUDGETS"]

_WHICH = ("best", "center", "mean", "best_ever")


class StopCondition:
    """Base class: ``__call__(record) -> reason or None``; ``state_dict`` for resumable ones."""

    def __call__(self, record: Record) -> str | None:  # pragma: no cover - overridden
        return None

    def reset(self) -> None:
        """Forget anything remembered across generations (called when a run starts)."""

    def bind(self, run: Run) -> None:
        """Called with the :class:`~blackbox.driver.loop.Run` before its first generation; conditions that
        need more than the record (the problem, the center) keep it."""

    def satisfied(self, record: Record) -> str | None:
        """The reason if the condition already holds after ``record``, without counting it again.

        Used when a restored run continues: a run whose budget is spent must not take one more
        generation. Stateless conditions just look at the record; stateful ones override this.
        """
        return self(record)

    def state_dict(self) -> dict[str, object]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


class Generations(StopCondition):
    """Stop after ``n`` generations in all."""

    def __init__(self, n: int):
        self.n = check_int("generations", n, minimum=1)

    def __call__(self, record):
        return f"generations {record.generation} >= {self.n}" if record.generation >= self.n else None


class Evaluations(StopCondition):
    """Stop once ``n`` evaluations (rows scored, the center included) have been spent."""

    def __init__(self, n: int):
        self.n = check_int("max_evaluations", n, minimum=1)

    def __call__(self, record):
        return f"evaluations {record.evaluations} >= {self.n}" if record.evaluations >= self.n else None


class EnvSteps(StopCondition):
    """Stop once ``n`` environment steps have been taken."""

    def __init__(self, n: int):
        self.n = check_int("max_steps", n, minimum=1)

    def __call__(self, record):
        return f"environment steps {record.steps} >= {self.n}" if record.steps >= self.n else None


class WallTime(StopCondition):
    """Stop once the run has used ``seconds`` of wall time."""

    def __init__(self, seconds: float):
        self.seconds = check_float("max_time", seconds, positive=True)

    def __call__(self, record):
        return f"wall time {record.time:.1f}s >= {self.seconds:g}s" if record.time >= self.seconds else None


def _value(record: Record, which: str) -> float:
    value = getattr(record, which)
    return float("nan") if value is None else float(value)


class TargetFitness(StopCondition):
    """Stop once the ``which`` fitness (best, center, mean or best_ever) reaches ``value``."""

    def __init__(self, value: float, which: str = "best_ever"):
        self.value = check_float("target", value)
        self.which = check_choice("which", which, _WHICH)

    def __call__(self, record):
        got = _value(record, self.which)
        return f"{self.which} fitness {got:g} >= target {self.value:g}" if got >= self.value else None


class GoalHeld(StopCondition):
    """Stop once the ``which`` fitness has been >= ``value`` for ``generations`` generations in a row.

    The usual RL criterion: "the center's return stayed above the goal for k generations".
    """

    def __init__(self, value: float, generations: int = 1, which: str = "center"):
        self.value = check_float("goal", value)
        self.generations = check_int("goal_generations", generations, minimum=1)
        self.which = check_choice("which", which, _WHICH)
        self._streak = 0

    def __call__(self, record):
        got = _value(record, self.which)
        self._streak = self._streak + 1 if (not math.isnan(got) and got >= self.value) else 0
        if self._streak >= self.generations:
            return f"{self.which} fitness >= {self.value:g} for {self._streak} generations"
        return None

    def satisfied(self, record):
        if self._streak >= self.generations:
            return f"{self.which} fitness >= {self.value:g} for {self._streak} generations"
        return None

    def reset(self) -> None:
        self._streak = 0

    def state_dict(self) -> dict[str, object]:
        return {"streak": self._streak}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._streak = int(state["streak"])


class GoalCheck(TypedDict):
    """What :meth:`ConfirmGoal.summary` says (a run's ``result.json`` keeps it as ``goal_check``)."""

    goal: float
    goal_episodes: int
    confirmed_mean: float | None
    checks: int
    solved: bool


#: What a run takes as a stop condition: a :class:`StopCondition` or any callable ``(record) -> reason``.
Condition = StopCondition | Callable[["Record"], object]


# -- goal confirmation (0.1.0's confirm.py): stop once the center *confirms* a goal on fresh episodes: the usual meaning of "solved" in RL.

_CONFIRM_KEY = 0x636F6E66  # "conf"


def confirmation_seed(run_seed: int, generation: int) -> int:
    """The seed from which a generation's confirmation episodes derive."""
    sequence = np.random.SeedSequence(int(run_seed), spawn_key=(_CONFIRM_KEY, int(generation)))
    return int(sequence.generate_state(1)[0])


class ConfirmGoal(StopCondition):
    """Stop when the center's mean fitness over ``episodes`` fresh evaluations reaches ``goal``.

    A check is made whenever the center's training fitness reaches the goal, or the level the
    problem's ``training_goal(goal)`` names where training fitness is not the score (a gym problem
    whose training rewards are shifted).
    """

    def __init__(self, goal: float, episodes: int = 20):
        self.goal = check_float("goal", goal)
        self.episodes = check_int("goal_episodes", episodes, minimum=1)
        #: [generation, mean of the confirmation episodes] of every check made.
        self.checks: list[list[float]] = []
        self._run: Run | None = None
        self._screen = self.goal

    def bind(self, run: Run) -> None:
        if not isinstance(run.problem, Scorable):
            raise ConfigError(
                f"confirming a goal on fresh episodes needs a problem with score(params, episodes, seed); "
                f"{type(run.problem).__name__} has none (drop goal_episodes)"
            )
        self._run = run
        problem = run.problem
        self._screen = float(problem.training_goal(self.goal)) if isinstance(problem, TrainsOnShiftedRewards) \
            else self.goal

    def __call__(self, record) -> str | None:
        if self._run is None:
            raise StateError("ConfirmGoal needs the run: optimize() binds it before the first generation")
        run = self._run
        if record.center is None or not record.center >= self._screen:
            return None
        seed = confirmation_seed(run.seed, record.generation)
        problem = cast(Scorable, run.problem)  # bind() refused a problem that is not Scorable
        returns = np.asarray(problem.score(run.strategy.center, self.episodes, seed), dtype=np.float64)
        self.checks.append([int(record.generation), float(np.mean(returns))])
        return self.satisfied(record)

    def satisfied(self, record) -> str | None:
        if self.checks and self.checks[-1][0] == record.generation and self.checks[-1][1] >= self.goal:
            return (f"center's mean over {self.episodes} fresh episodes {self.checks[-1][1]:g} "
                    f">= goal {self.goal:g}")
        return None

    def reset(self) -> None:
        self.checks = []

    def state_dict(self) -> dict[str, object]:
        return {"checks": [list(c) for c in self.checks]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.checks = [[int(g), float(m)] for g, m in state.get("checks", [])]

    @property
    def confirmed(self) -> float | None:
        """The mean of the last check, or None when no check was made."""
        return self.checks[-1][1] if self.checks else None

    def summary(self) -> GoalCheck:
        return {"goal": self.goal, "goal_episodes": self.episodes, "confirmed_mean": self.confirmed,
                "checks": len(self.checks),
                "solved": bool(self.checks) and self.checks[-1][1] >= self.goal}


# -- from settings to conditions ------------------------------------------------------------------

#: The budget conditions: a run needs at least one of them, or it could never stop.
BUDGETS = (Generations, Evaluations, EnvSteps, WallTime)


def stop_conditions(*, max_generations: int | None = None, max_evaluations: int | None = None,
                    max_steps: int | None = None, max_time: float | None = None, target: float | None = None,
                    goal: float | None = None, goal_generations: int | None = None,
                    goal_episodes: int | None = None, extra: Sequence[StopCondition | Callable] = (),
                    require_budget: bool = True) -> list[StopCondition | Callable]:
    """The stop conditions of a run, in a fixed order: budgets, target, goal, then ``extra``.

    ``goal`` alone or with ``goal_generations`` is a :class:`GoalHeld` (the center holds it that
    many generations); with ``goal_episodes`` a :class:`ConfirmGoal` (the center's mean over fresh
    episodes reaches it). ``extra`` conditions are any callables ``(record) -> reason``. Without a
    budget among them the run could never stop: a ConfigError unless ``require_budget`` is False.
    """
    for name, value in (("goal_generations", goal_generations), ("goal_episodes", goal_episodes)):
        if value is not None and goal is None:
            raise ConfigError(f"{name}={value!r} needs a goal: pass goal= (the fitness to reach) or drop {name}")
    if goal_generations is not None and goal_episodes is not None:
        raise ConfigError(
            f"give goal_generations (the center holds the goal k generations) or goal_episodes (confirmed "
            f"on fresh episodes), not both; got goal_generations={goal_generations!r} and "
            f"goal_episodes={goal_episodes!r}"
        )
    conditions: list[StopCondition | Callable] = []
    makers: tuple[tuple[Callable[[Any], StopCondition], Any], ...] = (
        (Generations, max_generations), (Evaluations, max_evaluations), (EnvSteps, max_steps),
        (WallTime, max_time), (TargetFitness, target))
    for maker, value in makers:
        if value is not None:
            conditions.append(maker(value))
    if goal is not None and goal_episodes is not None:
        conditions.append(ConfirmGoal(goal, goal_episodes))
    elif goal is not None:
        conditions.append(GoalHeld(goal, 1 if goal_generations is None else goal_generations))
    if extra is not None and (isinstance(extra, (str, bytes)) or not isinstance(extra, Iterable)):
        raise ConfigError(f"stop must be a list of stop conditions (callables (record) -> reason), got {extra!r}")
    for condition in extra or ():
        if not callable(condition):
            raise ConfigError(f"stop conditions must be callables (record) -> reason, got {condition!r}")
        conditions.append(condition)
    if require_budget and not any(isinstance(c, BUDGETS) for c in conditions):
        raise ConfigError(
            "the run has no budget and could never stop: pass max_generations=, max_evaluations=, "
            "max_steps= or max_time= (a target alone may never be reached)"
        )
    return conditions
