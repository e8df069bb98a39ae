"""The reinforcement-learning side of ``contrast rl``: Stable-Baselines3's PPO or sb3-contrib's ARS.

The algorithm trains with the zoo's tuned settings (:mod:`.zoo`) and is judged like a blackbox run:
every ``check_every`` environment steps its deterministic policy plays one fresh episode (what a
generation's center evaluation is to ES); when that episode's return reaches the goal, the policy
plays ``goal_episodes`` fresh episodes, and training stops once their mean reaches the goal
(:class:`blackbox.driver.stop.ConfirmGoal`'s rule). Observations of the checking episodes are
normalized with the training statistics, which they do not update. The clock follows the rule of a
blackbox run's (whose time inside generations holds each generation's center row but not its goal
confirmations): it holds training and the one progress episode per check, never the
``goal_episodes`` confirmation episodes nor the final check (``confirm_time`` holds those seconds);
steps count training only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from .zoo import ZooEntry, require_sb3

__all__ = ["RLCurve", "train_sb3", "check_interval"]


class _Stop(Exception):
    """Raised by the goal check to end training: sb3-contrib's ARS ignores a callback's False."""


@dataclass
class RLCurve:
    """One method's learning curve: a point per check (steps so far, seconds so far, return)."""

    method: str
    steps: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    confirmations: list[list[float]] = field(default_factory=list)  # [steps, mean of goal_episodes]
    steps_to_goal: int | None = None
    time_to_goal: float | None = None
    total_steps: int = 0
    total_time: float = 0.0
    stop_reason: str = ""
    confirm_time: float = 0.0  # seconds of confirmation episodes, kept out of times/time_to_goal/total_time
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def reached(self) -> bool:
        return self.steps_to_goal is not None

    @property
    def best_return(self) -> float | None:
        return max(self.returns) if self.returns else None

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "reached": self.reached, "best_return": self.best_return}

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> RLCurve:
        """The curve :meth:`as_dict` saved (its derived keys, ``reached`` and ``best_return``, left out)."""
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in saved.items() if key in names})


def check_interval(entry: ZooEntry, horizon: int) -> int:
    """Steps between checks: a rollout of the algorithm, and at least 10 episodes of ``horizon``.

    One checking episode per 10 training episodes' worth of steps keeps checking to a tenth of
    the simulation at most; a generation's center evaluation costs ES 1/(popsize + 1).
    """
    rollout = int(entry.kwargs.get("n_steps", 0)) * entry.n_envs
    return max(rollout, 10 * int(horizon), 1)


def _episode(model, env, normalize, seed: int) -> float:
    obs, _ = env.reset(seed=int(seed))
    total, done = 0.0, False
    while not done:
        x = normalize(obs[None]) if normalize is not None else obs[None]
        action, _ = model.predict(x, deterministic=True)
        obs, reward, terminated, truncated, _ = env.step(action[0])
        total += float(reward)
        done = terminated or truncated
    return total


def _goal_callback(curve: RLCurve, env, goal: float | None, goal_episodes: int, check_every: int,
                   seed: int, started: list[float], max_time: float | None, log: Callable[[str], object] | None = None, every: float = 10.0):
    from stable_baselines3.common.callbacks import BaseCallback

    episode_seeds = np.random.SeedSequence(seed, spawn_key=(0x726C,))  # "rl": fresh episodes, never training's

    class GoalCheck(BaseCallback):
        def __init__(self):
            super().__init__()
            self.next_check = check_every
            self.counter = 0
            self.last_log = 0.0

        def _clock(self) -> float:
            """Seconds of training so far: the confirmation episodes are not counted."""
            return time.perf_counter() - started[0] - curve.confirm_time

        def _fresh_seed(self) -> int:
            self.counter += 1
            return int(np.random.SeedSequence(episode_seeds.entropy, spawn_key=(0x726C, self.counter))
                       .generate_state(1)[0])

        def _normalize(self):
            vec = self.model.get_vec_normalize_env()
            return None if vec is None else vec.normalize_obs

        def _confirmed(self, steps: int, at: float, normalize) -> bool:
            """The mean of ``goal_episodes`` fresh episodes against the goal (outside the training clock);
            reaching it records the goal at ``steps`` / ``at`` seconds of training."""
            began = time.perf_counter()
            mean = float(np.mean([_episode(self.model, env, normalize, self._fresh_seed())
                                  for _ in range(goal_episodes)]))
            curve.confirm_time += time.perf_counter() - began
            curve.confirmations.append([steps, mean])
            if goal is None or mean < goal:
                return False
            curve.steps_to_goal, curve.time_to_goal = steps, at
            curve.stop_reason = f"mean over {goal_episodes} fresh episodes {mean:g} >= goal {goal:g}"
            return True

        def final_check(self) -> None:
            """The check where training ended: judged like every check, so a baseline that reached the
            goal after its last interval check, at the end of its budget (a race's included), is counted."""
            steps = int(self.model.num_timesteps)
            curve.steps.append(steps)
            curve.times.append(curve.total_time)
            began = time.perf_counter()
            normalize = self._normalize()
            value = _episode(self.model, env, normalize, self._fresh_seed())
            curve.returns.append(value)
            curve.confirm_time += time.perf_counter() - began
            if goal is not None and value >= goal:
                self._confirmed(steps, curve.total_time, normalize)

        def _on_step(self) -> bool:
            steps = int(self.model.num_timesteps)
            elapsed = self._clock()
            if max_time is not None and elapsed >= max_time:
                curve.stop_reason = f"time budget {max_time:g} s"
                raise _Stop
            if steps < self.next_check:
                return True
            self.next_check = steps + check_every
            normalize = self._normalize()
            value = _episode(self.model, env, normalize, self._fresh_seed())
            curve.steps.append(steps)
            curve.times.append(self._clock())
            curve.returns.append(value)
            if log is not None and curve.times[-1] - self.last_log >= every:
                self.last_log = curve.times[-1]
                log(f"{curve.method}: {steps:,} steps, return {value:.6g}, {curve.times[-1]:.0f} s")
            if goal is None or value < goal:
                return True
            if self._confirmed(steps, curve.times[-1], normalize):  # training stopped at the check
                raise _Stop
            return True

    return GoalCheck()


def train_sb3(entry: ZooEntry, *, goal: float | None, goal_episodes: int, max_steps: int | None,
              max_time: float | None, seed: int, threads: int | None, overrides: dict[str, Any] | None = None,
              log: Callable[[str], object] | None = None) -> RLCurve:
    """Train ``entry.algo`` (ppo or ars) on ``entry.task`` until the goal or a budget; its curve.

    The step budget is ``max_steps`` or the zoo's ``n_timesteps``; ``overrides`` replace zoo settings.
    ``log`` (e.g. ``print``) gets a progress line when training starts and every 10 s of checks.
    """
    require_sb3()
    import gymnasium as gym
    import torch
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    if threads:
        torch.set_num_threads(int(threads))
    kwargs = {**entry.kwargs, **(overrides or {})}
    algorithm: type[Any]
    if entry.algo == "ppo":
        from stable_baselines3 import PPO

        algorithm = PPO
    else:
        from sb3_contrib import ARS

        algorithm = ARS
    venv = make_vec_env(entry.task, n_envs=entry.n_envs, seed=seed)
    if entry.normalize is not None:
        options = dict(entry.normalize)
        if "gamma" in kwargs:
            options.setdefault("gamma", kwargs["gamma"])
        venv = VecNormalize(venv, **options)
    budget = int(max_steps) if max_steps is not None else entry.n_timesteps
    check_env = gym.make(entry.task)
    horizon = (check_env.spec.max_episode_steps if check_env.spec is not None else None) or 1000
    curve = RLCurve(method=f"{entry.algo.upper()} (Stable-Baselines3{', sb3-contrib' if entry.algo == 'ars' else ''})",
                    config={"zoo_entry": entry.key, "source": entry.describe(), "n_envs": entry.n_envs,
                            "policy": entry.policy, "normalize": entry.normalize, "budget_steps": budget,
                            "max_time": max_time, "threads": threads, "check_every": check_interval(entry, horizon),
                            "hyperparameters": {k: v for k, v in entry.raw.items()}, "overrides": overrides or {}})
    started = [0.0]
    callback = _goal_callback(curve, check_env, goal, goal_episodes, check_interval(entry, horizon), seed,
                              started, max_time, log)
    try:
        model = algorithm(entry.policy, venv, seed=seed, verbose=0, device="cpu", **kwargs)
        if log is not None:
            log(f"{curve.method}: training, budget {budget:,} steps ({entry.describe()})")
        started[0] = time.perf_counter()
        try:
            model.learn(total_timesteps=budget, callback=callback)
        except _Stop:
            pass
        curve.total_steps = int(model.num_timesteps)
        curve.total_time = time.perf_counter() - started[0] - curve.confirm_time
        if not curve.reached and (not curve.steps or curve.steps[-1] != curve.total_steps):
            callback.final_check()  # the curve ends where training ended
    finally:
        venv.close()
        check_env.close()
    if not curve.stop_reason:
        curve.stop_reason = f"step budget {budget:,}"
    return curve
