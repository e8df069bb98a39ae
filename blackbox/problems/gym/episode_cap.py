"""Adaptive episode caps: cut training episodes short, with a cap that follows the population.

Long episodes of a few members hold up a whole generation (every worker waits for the slowest),
and early in training they are often long for the wrong reasons. Salimans et al. 2017 cap
episodes at a length adjusted during training. Two rules, as a gym problem option
(``episode_cap=``):

- ``"mean"``: the cap of the next generation is ``episode_cap_factor`` (2) times the mean episode
  length of this one (the rule stated in issue 10); the first generation is uncapped.
- ``"adaptive"``: the rule of OpenAI's released ``es_distributed`` code (``episode_cutoff_mode =
  "adaptive:start,threshold,ratio"``, with Uber's maximum): start at ``episode_cap_start`` steps;
  whenever at least a fraction ``episode_cap_threshold`` (0.5) of a generation's episodes ran into
  the cap, multiply it by ``episode_cap_ratio`` (2): ``cap = int(ratio * cap)`` (at least one step more).

Either way the cap never exceeds the task's own limit. It counts the policy's decisions (agent
steps), applies to the population's episodes and the center's in ``evaluate`` (not to ``score``
or ``play``, which run full episodes, as the ES code's evaluation rollouts do), and lives in the
problem's state: the driver folds each generation's lengths in (``observe``) and sends the cap to
every worker with the center, so it is identical whatever the executor, and checkpoints keep it.

Caveat: a capped episode scores the return it had collected so far. Early in training this biases
the search toward what pays off quickly, and on tasks whose returns come late (or where surviving
longer is the point) the cap can stall learning: members that would do better in longer episodes
are cut before they show it, so the mean length, and with it the cap, may never grow. Use it to
bound the time per generation on tasks where good policies do not need much longer episodes than
the current ones, and watch the returns when you turn it on.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._validate import check_choice, check_float, check_int
from ...errors import ConfigError

__all__ = ["EpisodeCap", "RULES", "make_episode_cap"]

RULES = ("none", "mean", "adaptive")
DEFAULTS = {"factor": 2.0, "start": 100, "threshold": 0.5, "ratio": 2.0}
_OPTIONS = {"mean": ("factor",), "adaptive": ("start", "threshold", "ratio")}


class EpisodeCap:
    """The current cap (``cap``) and the rule that moves it after each generation."""

    def __init__(self, rule: str, limit: int, factor: float = 2.0, start: int = 100, threshold: float = 0.5,
                 ratio: float = 2.0):
        self.rule = rule
        self.limit = int(limit)
        self.factor = float(factor)
        self.start = int(start)
        self.threshold = float(threshold)
        self.ratio = float(ratio)
        self.cap = self.limit if rule == "mean" else min(self.start, self.limit)

    def observe(self, steps: np.ndarray, episodes: int, capped: np.ndarray) -> None:
        """Fold one generation in: per row, its total steps over ``episodes`` episodes and how many hit the cap."""
        count = len(steps) * int(episodes)
        if not count:
            return
        if self.rule == "mean":
            mean = float(np.sum(steps, dtype=np.int64)) / count
            self.cap = int(min(self.limit, max(1, math.ceil(self.factor * mean))))
        elif float(np.sum(capped, dtype=np.int64)) / count >= self.threshold:
            self.cap = int(min(self.limit, max(self.cap + 1, int(self.ratio * self.cap))))

    def describe(self) -> dict[str, Any]:
        options = {k: getattr(self, k) for k in _OPTIONS[self.rule]}
        return {"rule": self.rule, **options, "cap": self.cap}

    def state_dict(self) -> dict[str, Any]:
        return {"episode_cap": self.cap}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "episode_cap" in state:
            self.cap = int(min(self.limit, max(1, int(np.asarray(state["episode_cap"])))))


def make_episode_cap(rule: str | None, limit: int, factor: float | None, start: int | None,
                     threshold: float | None, ratio: float | None) -> EpisodeCap | None:
    """The cap for ``rule`` (None or "none": no cap), with options checked against the rule."""
    rule = "none" if rule is None else rule
    rule = check_choice("episode_cap", rule, RULES)
    given = {"factor": factor, "start": start, "threshold": threshold, "ratio": ratio}
    allowed = _OPTIONS.get(rule, ())
    for key, value in given.items():
        if value is not None and key not in allowed:
            owner = next(r for r, keys in _OPTIONS.items() if key in keys)
            raise ConfigError(f"episode_cap_{key} applies to episode_cap={owner!r}, but episode_cap={rule!r}")
    if rule == "none":
        return None
    values = {k: DEFAULTS[k] if v is None else v for k, v in given.items()}
    check_float("episode_cap_factor", values["factor"], positive=True)
    check_int("episode_cap_start", values["start"], minimum=1)
    check_float("episode_cap_threshold", values["threshold"], positive=True, maximum=1.0)
    check_float("episode_cap_ratio", values["ratio"], positive=True)
    if values["ratio"] <= 1.0:
        raise ConfigError(f"episode_cap_ratio must be > 1 (the cap only grows), got {values['ratio']}")
    return EpisodeCap(rule, limit, **values)
