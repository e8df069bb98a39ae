"""ES against reinforcement learning on one Gymnasium task: ``blackbox contrast rl``.

The ES side is exactly ``blackbox run --problem gym:TASK`` (the task's preset, through the same
resolver; ``--executor loky:workers=N`` may spread it over the cores), the RL side Stable-Baselines3's
PPO with RL Baselines3 Zoo's tuned settings (:mod:`.sb3`). Both stop at the same return goal, judged
the same way (the mean of fresh episodes of the current policy), or at their budget. With
``baseline="ars"`` the RL side is sb3-contrib's ARS with the zoo's ARS settings, and the ES side blackbox's
``ars`` with the same settings (``es_settings="zoo"``, :func:`ars_settings` translates them: one algorithm,
two implementations) or the task's preset (``es_settings="preset"``: what a user gets, against the zoo's
tuned ARS). ``race`` stops the baseline once it has used the steps (``"steps"``) or the wall time
(``"time"``) that ES needed to reach the goal: enough to tell which side needed less of it, for a
fraction of a baseline that would otherwise run its whole budget.

The report sets the measured ratios beside the claims of Salimans et al. (2017): ES needed 3-10x
more data than TRPO on MuJoCo, and wins on wall-clock time because it parallelizes.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from .sb3 import RLCurve, train_sb3
from .zoo import ZooEntry, require_sb3, zoo_entry

if TYPE_CHECKING:
    from ...config.run import ResolvedRun, RunConfig

__all__ = ["PAPER_DATA", "PAPER_QUOTE", "RACES", "RLContrastReport", "ars_settings", "run_rl_contrast", "check_task"]

#: What ``race`` may stop the baseline at: ES's steps or ES's wall time to the goal.
RACES = ("steps", "time")

#: Salimans et al. 2017, section 4.1: ES's data efficiency on MuJoCo against TRPO.
PAPER_DATA = (3.0, 10.0)
PAPER_QUOTE = ('Salimans et al. 2017: ES "required between 3x and 10x as much data" as TRPO on MuJoCo, '
               'and wins on wall-clock time because it parallelizes over many workers')


@dataclass
class RLContrastReport:
    """Both curves, the settings used and the ratios at the goal."""

    task: str
    goal: float | None
    goal_episodes: int
    baseline: str
    es: RLCurve
    rl: RLCurve
    es_command: str
    notes: list[str] = field(default_factory=list)
    #: When and under which load (1-minute load averages before and after) the contrast ran.
    measured: dict[str, Any] = field(default_factory=dict)
    #: Where the ES side's settings came from (``"preset"`` or ``"zoo"``) and what the baseline raced on.
    es_settings: str = "preset"
    race: str | None = None
    seed: int = 0

    @property
    def data_ratio(self) -> float | None:
        """ES's environment steps to the goal divided by the RL method's (the paper: 3-10)."""
        if self.es.steps_to_goal is None or not self.rl.steps_to_goal:
            return None
        return self.es.steps_to_goal / self.rl.steps_to_goal

    @property
    def time_ratio(self) -> float | None:
        """The RL method's wall time to the goal divided by ES's (> 1: ES is faster)."""
        if self.es.time_to_goal is None or self.rl.time_to_goal is None or not self.es.time_to_goal:
            return None
        return self.rl.time_to_goal / self.es.time_to_goal

    def as_dict(self) -> dict[str, object]:
        return {"task": self.task, "goal": self.goal, "goal_episodes": self.goal_episodes,
                "baseline": self.baseline, "es": self.es.as_dict(), "rl": self.rl.as_dict(),
                "es_command": self.es_command, "data_ratio": self.data_ratio, "time_ratio": self.time_ratio,
                "paper": {"data_ratio": list(PAPER_DATA), "quote": PAPER_QUOTE}, "notes": self.notes,
                "measured": self.measured, "es_settings": self.es_settings, "race": self.race,
                "seed": self.seed}

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> RLContrastReport:
        """The report a ``contrast-rl.json`` holds (:meth:`as_dict`): its plot can be drawn again."""
        return cls(task=saved["task"], goal=saved["goal"], goal_episodes=saved["goal_episodes"],
                   baseline=saved["baseline"], es=RLCurve.from_dict(saved["es"]), rl=RLCurve.from_dict(saved["rl"]),
                   es_command=saved["es_command"], notes=list(saved.get("notes", [])),
                   measured=dict(saved.get("measured", {})), es_settings=saved.get("es_settings", "preset"),
                   race=saved.get("race"), seed=saved.get("seed", 0))


#: A Gymnasium id: ``Name-vN``, optionally ``namespace/Name-vN`` (no module prefix, no options).
_TASK_ID = re.compile(r"^(?:[A-Za-z0-9_.-]+/)?[A-Za-z0-9_.-]+-v\d+$")


def check_task(task: str) -> None:
    """Refuse what is not a Gymnasium id, and an id Gymnasium does not know, naming the nearest ones."""
    from ...problems.gym.problem import make_gym_env

    if not _TASK_ID.match(task):
        raise ConfigError(f"task {task!r} is not a Gymnasium id: expected NAME-vN such as CartPole-v1 "
                          f"(no 'gym:' prefix, no module or options)")
    make_gym_env(task).close()


def ars_settings(entry: ZooEntry) -> tuple[list[str], list[str]]:
    """The zoo's ARS settings as ``blackbox run`` flags for blackbox's ``ars``, and what differs.

    n_delta directions -> popsize 2 * n_delta, n_top -> top, delta_std -> sigma, learning_rate -> lr,
    LinearPolicy -> a linear policy without bias and with clipped actions, normalize -> observation
    normalization from every episode, alive_bonus_offset -> reward_shift, zero_policy (sb3-contrib's
    default) -> a start at zero weights.
    """
    raw, notes = entry.raw, []
    n_delta = int(raw.get("n_delta", 2))
    flags = ["--strategy", "ars", "--set", f"popsize={2 * n_delta}", "--set", f"top={int(raw.get('n_top', n_delta))}",
             "--set", f"sigma={float(raw.get('delta_std', 0.05))}", "--set", f"lr={float(raw.get('learning_rate', 0.02))}"]
    if raw.get("policy", "MlpPolicy") == "LinearPolicy":
        flags += ["--set", "problem.policy=linear", "--set", "problem.bias=false", "--set", "problem.action_bounds=clip"]
    else:
        hidden = (entry.kwargs.get("policy_kwargs") or {}).get("net_arch", [64, 64])
        flags += ["--set", f"problem.hidden={list(hidden)}", "--set", "problem.activation=relu",
                  "--set", "problem.action_bounds=clip"]
    if entry.normalize is not None and entry.normalize.get("norm_obs", True):
        flags += ["--set", "problem.obs_norm=true", "--set", "problem.obs_norm_prob=1.0"]
    offset = float(raw.get("alive_bonus_offset", 0) or 0)
    if offset != 0:  # added to every training reward by both: the survival bonus removed
        flags += ["--set", f"problem.reward_shift={offset:g}"]
    if raw.get("zero_policy", True):
        flags += ["--set", "x0=0"]
    n_top = int(raw.get("n_top", n_delta))
    notes.append(f"sb3-contrib divides ARS's step by the unbiased standard deviation of the {2 * n_top} best returns, "
                 f"blackbox's ars (as Mania et al.'s code) by the biased one: a step {math.sqrt(2 * n_top / (2 * n_top - 1)):.3g}x "
                 f"sb3-contrib's")
    return flags, notes


#: Turns ``blackbox run`` flags into the run config they say (the command line's own reader,
#: :func:`blackbox.cli.run.run_config_from_flags`, handed down by the caller).
FlagReader = Callable[[Sequence[str]], "RunConfig"]


def _es_curve(task: str, flags: list[str], seed: int, out: Path, suffix: str,
              read_flags: FlagReader, log: Callable[[str], object] | None = None, every: float = 10.0) -> tuple[RLCurve, dict[str, Any]]:
    """Run ``blackbox run --problem gym:TASK FLAGS --seed SEED`` into ``out``; its curve and resolved config."""
    from ...config.run import resolve_run_config
    from ...driver.loop import Callback
    from ..runs import start_run

    argv = ["run", "--problem", f"gym:{task}", *flags, "--seed", str(seed)]
    config = read_flags([*argv[1:], "--no-plot"])
    run = resolve_run_config(config)
    resolved = run.to_dict()
    method = f"blackbox {resolved['strategy']['name']}{suffix}"
    curve = RLCurve(method=method, config={"command": "blackbox " + shlex.join(argv), "strategy": resolved["strategy"],
                                           "problem": resolved["problem"], "executor": resolved["executor"],
                                           "stop": resolved["stop"]})

    last = [0.0]

    class Trace(Callback):
        def on_generation(self, run, record):
            if record.center is not None:
                curve.steps.append(int(record.steps))
                curve.times.append(float(record.time))
                curve.returns.append(float(record.center))
            if log is not None and (record.time - last[0] >= every or record.generation == 1):
                last[0] = record.time
                center = "-" if record.center is None else f"{record.center:.6g}"
                log(f"{method}: generation {record.generation}, {record.steps:,} steps, center {center}, "
                    f"{record.time:.0f} s")

    if log is not None:
        log(f"{method}: training ({curve.config['command']})")
    summary = start_run(run, out, overwrite=True, callbacks=[Trace()])
    check = summary.get("goal_check")
    curve.total_steps, curve.total_time = int(summary["steps"]), float(summary["wall_time"])
    curve.stop_reason = str(summary["stop_reason"])
    if check and check["solved"]:
        curve.steps_to_goal, curve.time_to_goal = curve.total_steps, curve.total_time
    return curve, resolved


#: The one clock rule of both sides, as the report states it.
CLOCK_RULE = ("wall times are training only: each side's clock holds its training and its one progress episode "
              "per check (ES: the center row of each generation; the RL side: one episode per check interval), "
              "never the goal confirmation episodes")


def preset_step_budget(run: ResolvedRun) -> int | None:
    """The step budget a resolved ES run stands for: its max_steps, else generations x rows x the horizon.

    ``None`` where it has neither (a time budget only).
    """
    stop = run.stop
    if stop.max_steps is not None:
        return int(stop.max_steps)
    if stop.generations is None:
        return None
    import gymnasium as gym

    env = run.problem.options.get("env")
    spec = gym.spec(env) if isinstance(env, str) else None
    horizon = (spec.max_episode_steps if spec is not None else None) or 1000
    rows = int(run.strategy.options.get("popsize", 0) or 0) + 1
    episodes = int(run.problem.options.get("episodes", 1) or 1)
    return int(stop.generations) * rows * episodes * int(horizon)


def run_rl_contrast(task: str, read_flags: FlagReader, *, baseline: str = "ppo", seed: int = 0, workers: int = 1,
                    goal: float | None = None, goal_episodes: int | None = None, max_steps: int | None = None,
                    max_time: float | None = None, es_flags: list[str] | None = None,
                    threads: int | None = None, out: str | Path | None = None, log: Callable[[str], object] | None = None,
                    es_settings: str | None = None, race: str | None = None) -> RLContrastReport:
    """Train ES and the RL baseline on ``task`` to the same goal or budget; the report.

    ``workers`` > 1 runs ES on the loky executor with that many processes; ``threads`` sets torch's
    threads for the baseline (default: ``workers``). ``goal``/``goal_episodes`` default to the preset's.
    ``read_flags`` reads ``blackbox run`` flags into a run config: the command line's own reader,
    :func:`blackbox.cli.run.run_config_from_flags` (the command line is a layer above this one).
    Both sides get the same step budget: ``max_steps``, else the larger of the zoo's ``n_timesteps``
    and the preset's (:func:`preset_step_budget`), with or without ``max_time`` (a time cap for both on top
    of it, never instead of it). Both clocks follow :data:`CLOCK_RULE`. ``log``
    (e.g. a print to stderr) gets progress lines from each side while it trains.
    ``es_settings`` (``baseline="ars"`` only): ``"zoo"`` (the default there) or ``"preset"``; ``race``:
    ``"steps"`` or ``"time"`` (see the module docstring), ``None`` for the whole budget.
    """
    if baseline not in ("ppo", "ars"):
        raise ConfigError(f"baseline must be 'ppo' or 'ars', got {baseline!r}")
    if es_settings is None:
        es_settings = "zoo" if baseline == "ars" else "preset"
    if es_settings not in ("preset", "zoo") or (baseline == "ppo" and es_settings != "preset"):
        allowed = "'preset' or 'zoo'" if baseline == "ars" else "'preset' (the zoo has ARS settings only for --baseline ars)"
        raise ConfigError(f"es_settings must be {allowed} with baseline {baseline!r}, got {es_settings!r}")
    if race is not None and race not in RACES:
        raise ConfigError(f"race must be one of {', '.join(RACES)} (or none), got {race!r}")
    require_sb3()
    check_task(task)
    if workers < 1:
        raise ConfigError(f"workers must be >= 1 (processes for ES), got {workers}")
    entry = zoo_entry(baseline, task)
    flags, notes = (ars_settings(entry) if es_settings == "zoo" else ([], []))
    flags = list(flags) + list(es_flags or [])
    suffix = "" if flags else " (preset)"
    if workers > 1:
        flags += ["--executor", f"loky:workers={workers}"]
    if max_steps is None:
        from ...config.run import resolve_run_config

        planned = preset_step_budget(resolve_run_config(read_flags(["--problem", f"gym:{task}", *flags,
                                                                    *_budget_flags(task, flags, goal, goal_episodes,
                                                                                   None, None)])))
        max_steps = max(entry.n_timesteps, planned or 0)
        notes.append(f"same step budget for both: {max_steps:,} steps, the larger of the zoo's n_timesteps "
                     f"({entry.n_timesteps:,}) and the preset's ({'none' if planned is None else f'{planned:,}'})")
    flags += _budget_flags(task, flags, goal, goal_episodes, max_steps, max_time)
    measured = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": _load()}
    with tempfile.TemporaryDirectory(prefix="contrast-rl-") as scratch:
        root = Path(out) if out is not None else Path(scratch)
        es, resolved = _es_curve(task, flags, seed, root / "es-run", suffix, read_flags, log)
    stop = resolved["stop"]
    goal_value, episodes = stop.get("goal"), int(stop.get("goal_episodes", 1))
    if goal_value is None:
        notes.append("no goal: the preset of this task has none and none was given (--goal): both ran their budget")
    shift = resolved["problem"].get("reward_shift") or 0.0
    if shift:
        notes.append(f"ES's curve is its training return, whose rewards are shifted by {shift:g} per step "
                     f"(reward_shift): an episode of n steps shows {-shift:g} x n less than its return; "
                     f"the goal is confirmed on the task's own reward")
    cut_note = _cut_note(task, resolved["problem"])
    if cut_note:
        notes.append(cut_note)
    preset_note = _preset_note(task, resolved)
    if preset_note:
        notes.append(preset_note)
    notes.append(CLOCK_RULE)
    rl_steps, rl_time = max_steps, max_time
    if race is not None and es.reached:
        if race == "steps":
            rl_steps = min(max_steps, int(es.steps_to_goal or 0))
        else:
            rl_time = min(max_time, float(es.time_to_goal or 0.0)) if max_time is not None else float(es.time_to_goal or 0.0)
        spent = f"{rl_steps:,} steps" if race == "steps" else f"{rl_time:.1f} s of training"
        notes.append(f"race on {race}: the baseline stopped at the {spent} ES needed to reach the goal; "
                     f"'not reached' there means it needs more {'steps' if race == 'steps' else 'wall time'} than ES")
    elif race is not None:
        notes.append(f"race on {race}: ES did not reach the goal, so the baseline ran the whole budget")
    rl = train_sb3(entry, goal=goal_value, goal_episodes=episodes, max_steps=rl_steps, max_time=rl_time,
                   seed=seed, threads=threads or workers, log=log)
    measured["load_after"] = _load()
    return RLContrastReport(task=task, goal=goal_value, goal_episodes=episodes, baseline=baseline, es=es, rl=rl,
                            es_command=es.config["command"], notes=notes, measured=measured,
                            es_settings=es_settings, race=race, seed=seed)


def _load() -> float | None:
    """The 1-minute load average (None where the system has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _cut_note(task: str, problem: dict[str, Any]) -> str | None:
    """What a table says of ES trained on cut episodes (``episode_cap=fixed``), or None when it was not."""
    if problem.get("episode_cap") != "fixed":
        return None
    cut, lift = problem["episode_cap_steps"], problem.get("episode_cap_lift")
    until = "" if lift is None else f" until its center row's training return first reached {lift:g}"
    return (f"{task}: ES's population trains on episodes cut at {cut} steps (episode_cap=fixed){until}; its "
            f"curve is the center row's, which plays whole episodes, counted in its steps")


def _preset_note(task: str, resolved: dict[str, Any]) -> str | None:
    """A note when the task has no preset: ES then ran with the options named here."""
    from ...problems.gym.presets import PRESETS

    if task in PRESETS:
        return None
    strategy = resolved["strategy"]
    options = ", ".join(f"{k}={v}" for k, v in strategy.items() if k != "name")
    return (f"{task} has no preset: ES ran {strategy['name']} with its defaults and the flags given "
            f"({options})")


def _budget_flags(task: str, flags: list[str], goal: float | None, goal_episodes: int | None,
                  max_steps: int | None, max_time: float | None) -> list[str]:
    extra: list[str] = []
    if goal is not None:
        extra += ["--goal", repr(float(goal))]
        extra += ["--goal-episodes", str(goal_episodes or 10)]
    elif goal_episodes is not None:
        extra += ["--goal-episodes", str(goal_episodes)]
    if max_steps is not None:
        extra += ["--max-steps", str(int(max_steps))]
    if max_time is not None:
        extra += ["--max-time", repr(float(max_time))]
    return extra
