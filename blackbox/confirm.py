"""Stop once the center *confirms* a goal on fresh episodes: the usual meaning of "solved" in RL.

A single training episode can be lucky. :class:`ConfirmGoal` re-evaluates the strategy's center on
``episodes`` fresh episodes (CartPole-v1 counts as solved at a mean return of 475 over 100 of them;
the preset uses 20) with the problem's ``score(params, episodes, seed)`` and stops the run once
their mean reaches the goal. To stay cheap it only does so in generations whose evaluated center
already reached the goal in training. The center it checks is the one the run returns (after that
generation's update), so what is confirmed is what is saved. Seeds of the confirmation episodes
derive from (run seed, generation) and never coincide with training seeds. It is a stop condition
like any other: ``[stop] goal = 475, goal_episodes = 20`` in a run config, checkpointed with its
checks, and a run it stopped counts as finished.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ConfigError, StateError
from .stop import StopCondition
from .validation import check_float, check_int

__all__ = ["ConfirmGoal", "confirmation_seed"]

_CONFIRM_KEY = 0x636F6E66  # "conf"


def confirmation_seed(run_seed: int, generation: int) -> int:
    """The seed from which a generation's confirmation episodes derive."""
    sequence = np.random.SeedSequence(int(run_seed), spawn_key=(_CONFIRM_KEY, int(generation)))
    return int(sequence.generate_state(1)[0])


class ConfirmGoal(StopCondition):
    """Stop when the center's mean fitness over ``episodes`` fresh evaluations reaches ``goal``."""

    def __init__(self, goal: float, episodes: int = 20):
        self.goal = check_float("goal", goal)
        self.episodes = check_int("goal_episodes", episodes, minimum=1)
        #: [generation, mean of the confirmation episodes] of every check made.
        self.checks: list[list[float]] = []
        self._run: Any = None

    def bind(self, run: Any) -> None:
        if not callable(getattr(run.problem, "score", None)):
            raise ConfigError(
                f"confirming a goal on fresh episodes needs a problem with score(params, episodes, seed); "
                f"{type(run.problem).__name__} has none (drop goal_episodes)"
            )
        self._run = run

    def __call__(self, record) -> str | None:
        if self._run is None:
            raise StateError("ConfirmGoal needs the run: optimize() binds it before the first generation")
        if record.center is None or not record.center >= self.goal:
            return None
        run = self._run
        seed = confirmation_seed(run.seed, record.generation)
        returns = np.asarray(run.problem.score(run.strategy.center, self.episodes, seed), dtype=np.float64)
        self.checks.append([int(record.generation), float(np.mean(returns))])
        return self.satisfied(record)

    def satisfied(self, record) -> str | None:
        if self.checks and self.checks[-1][0] == record.generation and self.checks[-1][1] >= self.goal:
            return (f"center's mean over {self.episodes} fresh episodes {self.checks[-1][1]:g} "
                    f">= goal {self.goal:g}")
        return None

    def reset(self) -> None:
        self.checks = []

    def state_dict(self) -> dict[str, Any]:
        return {"checks": [list(c) for c in self.checks]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.checks = [[int(g), float(m)] for g, m in state.get("checks", [])]

    @property
    def confirmed(self) -> float | None:
        """The mean of the last check, or None when no check was made."""
        return self.checks[-1][1] if self.checks else None

    def summary(self) -> dict[str, Any]:
        return {"goal": self.goal, "goal_episodes": self.episodes, "confirmed_mean": self.confirmed,
                "checks": len(self.checks),
                "solved": bool(self.checks) and self.checks[-1][1] >= self.goal}
