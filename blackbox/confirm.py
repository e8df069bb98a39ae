"""Stop once the center *confirms* a goal on fresh episodes: the usual meaning of "solved" in RL.

A single training episode can be lucky. :class:`ConfirmGoal` re-evaluates the strategy's center on
``episodes`` fresh episodes (CartPole-v1 counts as solved at a mean return of 475 over them) with
the problem's ``score(params, episodes, seed)`` and stops the run once their mean reaches the goal.
To stay cheap it only does so in generations whose evaluated center already reached the goal in
training. The center it checks is the one the run returns (after that generation's update), so
what is confirmed is what is saved. Seeds of the confirmation episodes derive from (run seed,
generation) and never coincide with training seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ConfigError
from .loop import Callback, Record, Run
from .validation import check_float, check_int

__all__ = ["ConfirmGoal", "confirmation_seed"]

_CONFIRM_KEY = 0x636F6E66  # "conf"


def confirmation_seed(run_seed: int, generation: int) -> int:
    """The seed from which a generation's confirmation episodes derive."""
    sequence = np.random.SeedSequence(int(run_seed), spawn_key=(_CONFIRM_KEY, int(generation)))
    return int(sequence.generate_state(1)[0])


class ConfirmGoal(Callback):
    """Stop when the center's mean fitness over ``episodes`` fresh evaluations reaches ``goal``."""

    def __init__(self, goal: float, episodes: int = 20):
        self.goal = check_float("goal", goal)
        self.episodes = check_int("goal_episodes", episodes, minimum=1)
        #: (generation, mean of the confirmation episodes) of every check made.
        self.checks: list[tuple[int, float]] = []

    def on_start(self, run: Run) -> None:
        if not callable(getattr(run.problem, "score", None)):
            raise ConfigError(
                f"confirming a goal on fresh episodes needs a problem with score(params, episodes, seed); "
                f"{type(run.problem).__name__} has none (drop goal_episodes)"
            )

    def on_generation(self, run: Run, record: Record) -> bool:
        if record.center is None or not record.center >= self.goal:
            return False
        seed = confirmation_seed(run.seed, record.generation)
        returns = np.asarray(run.problem.score(run.strategy.center, self.episodes, seed), dtype=np.float64)
        mean = float(np.mean(returns))
        self.checks.append((record.generation, mean))
        return mean >= self.goal

    @property
    def stop_reason(self) -> str | None:
        """Why the run stopped, once a check passed (the driver reports it)."""
        if self.checks and self.checks[-1][1] >= self.goal:
            return (f"center's mean over {self.episodes} fresh episodes {self.checks[-1][1]:g} "
                    f">= goal {self.goal:g}")
        return None

    @property
    def confirmed(self) -> float | None:
        """The mean of the last check, or None when no check was made."""
        return self.checks[-1][1] if self.checks else None

    def summary(self) -> dict[str, Any]:
        return {"goal": self.goal, "goal_episodes": self.episodes, "confirmed_mean": self.confirmed,
                "checks": len(self.checks),
                "solved": bool(self.checks) and self.checks[-1][1] >= self.goal}
