"""The optional capabilities of a problem, declared as protocols (``blackbox.core.problem``) and checked
with ``isinstance`` where they are needed: goal confirmation, ``blackbox play`` and presets."""

from __future__ import annotations

import numpy as np
import pytest

import blackbox as bb
from blackbox.config.run import empty_preset, problem_preset
from blackbox.core.problem import Playable, Recommends, Scorable
from blackbox.registry.component import Component
from blackbox.registry.plugins import problems
from blackbox.stop import ConfirmGoal


class Scored(bb.Problem):
    """A problem that can score its center on fresh episodes and nothing else."""

    name = "scored"
    dim = 2

    def evaluate(self, params, seeds):
        return bb.EvalResult(-np.sum(params**2, axis=1), np.ones(len(params), dtype=np.int64))

    def score(self, params, episodes=20, seed=0):
        return np.full(episodes, -float(np.sum(np.asarray(params) ** 2)))


class Played(Scored):
    """A problem that can also play an episode for people."""

    env_id = "Toy-v0"

    def play(self, params, seed=0, render_mode=None, frames=None):
        return float(self.score(params, 1)[0]), 1


def test_the_protocols_tell_what_a_problem_can_do():
    sphere = bb.make_problem("sphere:dim=2")
    assert not isinstance(sphere, (Scorable, Playable)) and not isinstance(problems.load("sphere"), Recommends)
    assert isinstance(Scored(), Scorable) and not isinstance(Scored(), Playable)
    assert isinstance(Played(), Scorable) and isinstance(Played(), Playable)
    gym = problems.load("gym")  # the class: loading it imports no gymnasium
    assert issubclass(gym, Scorable) and callable(gym.play) and isinstance(gym, Recommends)


def test_confirm_goal_needs_a_scorable_problem():
    strategy = bb.make_strategy("openai-es", dim=2, seed=0)
    with pytest.raises(bb.ConfigError, match=r"^confirming a goal on fresh episodes needs a problem with "
                                             r"score\(params, episodes, seed\); Sphere has none \(drop goal_episodes\)$"):
        bb.optimize(strategy, bb.make_problem("sphere:dim=2"), generations=2, seed=0, stop=[ConfirmGoal(0.0)])
    confirm = ConfirmGoal(-1e9, episodes=3)
    result = bb.optimize(bb.make_strategy("openai-es", dim=2, seed=0), Scored(), generations=5, seed=0,
                         stop=[confirm])
    assert result.stop_reason.startswith("center's mean over 3 fresh episodes") and confirm.checks


def test_a_problem_without_recommended_has_an_empty_preset():
    assert problem_preset(Component.parse("problem", "sphere"), "openai-es") == empty_preset()
