"""The small cyclic MDP that ES tutorials use as their minimal reinforcement-learning example.

Three states sit on a cycle (0 -> 1 -> 2 -> 0) and the agent has three actions: move clockwise,
move counter-clockwise, stay. Moving clockwise earns +1 and goes to the next state; any other
action earns -1 and ends the episode. Registered with a 1,000-step cap (``TimeLimit``), so the best
return is 1,000 and an episode of ``k`` correct steps followed by a mistake returns ``k - 1``.

The observation is the one-hot state (float32, shape (3,)); the start state is drawn uniformly
from the reset seed. With ``state_dependent=True`` the action that moves clockwise differs per
state (in state ``s`` it is action ``(0 - s) mod 3``, i.e. the meaning of action ``a`` is
``(a + s) mod 3``), so a policy must read its observation; by default action 0 is clockwise
everywhere.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["CyclicMDP", "CLOCKWISE", "COUNTER_CLOCKWISE", "STAY", "MAX_EPISODE_STEPS"]

CLOCKWISE, COUNTER_CLOCKWISE, STAY = 0, 1, 2
N_STATES = 3
MAX_EPISODE_STEPS = 1000


class CyclicMDP(gym.Env):
    """3 states on a cycle, 3 actions: clockwise earns +1 and moves on; anything else: -1, done."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, state_dependent: bool = False, render_mode: str | None = None):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.state_dependent = bool(state_dependent)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, shape=(N_STATES,), dtype=np.float32)
        self.action_space = spaces.Discrete(N_STATES)
        self.state = 0

    def clockwise_action(self, state: int | None = None) -> int:
        """The action that moves clockwise in ``state`` (default: the current state)."""
        s = self.state if state is None else int(state)
        return (CLOCKWISE - s) % N_STATES if self.state_dependent else CLOCKWISE

    def _observation(self) -> np.ndarray:
        obs = np.zeros(N_STATES, dtype=np.float32)
        obs[self.state] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, object] | None = None):
        super().reset(seed=seed)
        self.state = int(self.np_random.integers(N_STATES))
        return self._observation(), {"state": self.state}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action must be 0, 1 or 2, got {action!r}")
        if int(action) == self.clockwise_action():
            self.state = (self.state + 1) % N_STATES
            return self._observation(), 1.0, False, False, {"state": self.state}
        return self._observation(), -1.0, True, False, {"state": self.state}

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return " ".join(f"[{s}]" if s == self.state else f" {s} " for s in range(N_STATES)) + "\n"
