"""Episode caps: cut training episodes short, with a cap that follows the population or a fixed one.

Long episodes of a few members hold up a whole generation (every worker waits for the slowest),
and early in training they are often long for the wrong reasons. Salimans et al. 2017 cap
episodes at a length adjusted during training. Three rules, as a gym problem option
(``episode_cap=``, the :class:`~.options.EpisodeCap` group):

- ``"mean"``: the cap of the next generation is ``episode_cap_factor`` (2) times the mean episode
  length of this one (the rule stated in issue 10); the first generation is uncapped.
- ``"adaptive"``: the rule of OpenAI's released ``es_distributed`` code (``episode_cutoff_mode =
  "adaptive:start,threshold,ratio"``, with Uber's maximum): start at ``episode_cap_start`` steps;
  whenever at least a fraction ``episode_cap_threshold`` (0.5) of a generation's episodes ran into
  the cap, multiply it by ``episode_cap_ratio`` (2): ``cap = int(ratio * cap)`` (at least one step more).
- ``"fixed"``: every episode of the population is cut at ``episode_cap_steps`` decisions, a shorter
  training horizon. On a task whose reward comes at a steady rate through the episode (Swimmer-v5),
  the first steps of an episode rank the perturbations nearly as its whole length does, for a
  fraction of the steps. The center row (the unperturbed center the driver adds to each generation,
  :mod:`blackbox.core.center_row`) plays full episodes: its return is the task's own, so the record's
  center return, the goal screen (``GymProblem.training_goal``) and the curves mean what they mean
  without a cap, and its steps are counted with the training's. The run's best row (``best_params``)
  is then picked among the centers (the members' returns are partial, :func:`cap_info`). With
  ``episode_cap_lift`` R, the cut is lifted for good once the center row's training fitness reaches R:
  from then on the population plays full episodes. A cut horizon trains a quick start cheaply but
  never the rest of an episode (HalfCheetah-v5 learns to run in 500 steps, and some of its centers
  then flip late in a full episode, so a goal first passed in one episode takes millions of steps
  more to confirm over ten); lifting the cut once the center is good trains the whole episode. On
  HalfCheetah's tuning seeds, lifted at the goal, it did not confirm sooner (BENCHMARKS.md 8a).

Under any rule the cap never exceeds the task's own limit. It counts the policy's decisions (agent
steps), applies to the population's episodes and (rules ``"mean"`` and ``"adaptive"``) the center's
in ``evaluate`` (not to ``score`` or ``play``, which run full episodes, as the ES code's evaluation
rollouts do), and lives in the problem's state: the driver folds each generation's lengths in
(``observe``) and sends the cap to every worker with the center, so it is identical whatever the
executor, and checkpoints keep it. The center row is known to ``evaluate`` from the rows it is
handed (:attr:`~blackbox.core.row_source.RowSource.center`), which every executor passes on.

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

from ...core.problem import PARTIAL
from ...core.row_source import RowSource
from .options import CAP_OPTIONS, EpisodeCap

__all__ = ["RunningCap", "running_cap", "make_episode_cap", "row_limits", "cap_info", "center_fitness"]


class RunningCap:
    """The current cap (``cap``) and the rule that moves it after each generation."""

    def __init__(self, rule: str, limit: int, factor: float = 2.0, start: int = 100, threshold: float = 0.5,
                 ratio: float = 2.0, steps: int = 0, lift: float | None = None):
        self.rule = rule
        self.limit = int(limit)
        self.factor = float(factor)
        self.start = int(start)
        self.threshold = float(threshold)
        self.ratio = float(ratio)
        self.steps = int(steps)
        self.lift = None if lift is None else float(lift)
        first = {"mean": self.limit, "fixed": self.steps}.get(rule, self.start)
        self.cap = min(first, self.limit)

    def observe(self, steps: np.ndarray, episodes: int, capped: np.ndarray, center: float | None = None) -> None:
        """Fold one generation in: per row, its total steps over ``episodes`` episodes and how many hit the cap;
        ``center``, the center row's training fitness over full episodes (None: no center row this generation)."""
        if self.rule == "fixed":
            if self.lift is not None and center is not None and center >= self.lift:
                self.cap = self.limit
            return
        count = len(steps) * int(episodes)
        if not count:
            return
        if self.rule == "mean":
            mean = float(np.sum(steps, dtype=np.int64)) / count
            self.cap = int(min(self.limit, max(1, math.ceil(self.factor * mean))))
        elif float(np.sum(capped, dtype=np.int64)) / count >= self.threshold:
            self.cap = int(min(self.limit, max(self.cap + 1, int(self.ratio * self.cap))))

    @property
    def cuts_every_episode(self) -> bool:
        """A fixed cap below the task's limit: the population sees the first steps of each episode, whose
        return bounds nothing about the whole episode's, so the center row plays full ones (:func:`row_limits`)."""
        return self.rule == "fixed" and self.cap < self.limit

    def describe(self) -> dict[str, object]:
        options = {k: getattr(self, k) for k in CAP_OPTIONS[self.rule] if getattr(self, k) is not None}
        return {"rule": self.rule, **options, "cap": self.cap}

    def state_dict(self) -> dict[str, object]:
        return {"episode_cap": self.cap}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # A fixed cap is the option's, not state, unless it can be lifted: then whether it was is.
        if "episode_cap" in state and (self.rule != "fixed" or self.lift is not None):
            self.cap = int(min(self.limit, max(1, int(np.asarray(state["episode_cap"])))))


def running_cap(options: EpisodeCap | None, limit: int) -> RunningCap | None:
    """The cap of a run under the ``options`` (None or rule ``"none"``: no cap), below the task's ``limit``."""
    if options is None or not options.enabled():
        return None
    return RunningCap(str(options.rule), limit, **options.values())


def row_limits(cap: RunningCap | None, rows: np.ndarray | RowSource, task_limit: int) -> np.ndarray | None:
    """Each row's episode limit under ``cap`` (None: no cap): the cap, except for the center row under a
    cap that cuts every episode (:attr:`RunningCap.cuts_every_episode`), which gets the task's own
    ``task_limit``. ``rows`` names its center row when it is a
    :class:`~blackbox.core.row_source.RowSource` that holds one; plain arrays have none."""
    if cap is None:
        return None
    limits = np.full(len(rows), cap.cap, dtype=np.int64)
    center = rows.center if cap.cuts_every_episode and isinstance(rows, RowSource) else None
    if center is not None:
        limits[center] = task_limit
    return limits


def cap_info(cap: RunningCap, limits: np.ndarray, lengths: np.ndarray, task_limit: int) -> dict[str, np.ndarray]:
    """What ``evaluate`` reports of a cap: per row, how many of its episodes (``lengths``, ``(m, E)``) ran
    into their limit, and, under a cap that cuts every episode, which rows' returns are partial (cut below
    ``task_limit``: the run's best row is then picked among the full ones, :data:`~blackbox.core.problem.PARTIAL`)."""
    info = {"episodes_capped": (lengths >= limits[:, None]).sum(axis=1).astype(np.int64)}
    if cap.cuts_every_episode:
        info[PARTIAL] = limits < task_limit
    return info


def center_fitness(fitness: np.ndarray, info: dict[str, Any]) -> float | None:
    """The training fitness of the one row that played full episodes under a cap that cuts every episode
    (the center row, :func:`cap_info`), or None when the generation had no such row."""
    partial = info.get(PARTIAL)
    if partial is None:
        return None
    full = np.flatnonzero(~np.asarray(partial, dtype=bool))
    return float(np.asarray(fitness)[full[0]]) if len(full) == 1 else None


def make_episode_cap(rule: str | None, limit: int, factor: float | None, start: int | None,
                     threshold: float | None, ratio: float | None, steps: int | None = None,
                     lift: float | None = None) -> RunningCap | None:
    """The cap for ``rule`` (None or "none": no cap), with options checked against the rule."""
    return running_cap(EpisodeCap(rule, factor, start, threshold, ratio, steps, lift), limit)
