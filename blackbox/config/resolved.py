"""A resolved run: every setting of one run, typed, with its three components bound and complete.

:func:`blackbox.config.run.resolve_run_config` makes a :class:`ResolvedRun`; :meth:`ResolvedRun.to_dict`
is exactly what ``RUN/config.toml`` holds, and :func:`build_components` turns it into the strategy,
problem and executor (no spec is parsed and no option checked again on the way).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from ..core.executor import Executor
from ..core.problem import Problem
from ..core.strategy import Strategy
from ..driver.stop import StopCondition, stop_conditions
from ..errors import ConfigError
from ..files import to_plain
from ..registry.component import KINDS, Component
from ..registry.plugins import make
from .toml import Table

__all__ = ["ResolvedRun", "Stop", "Checkpointing", "Logging", "build_components", "BUDGET_KEYS"]

#: The budgets of a run, as ``[stop]`` spells them: it stops when the first is spent.
BUDGET_KEYS = ("generations", "max_evaluations", "max_steps", "max_time")


@dataclass(frozen=True)
class Stop:
    """The ``[stop]`` table: budgets, a target, and a goal held or confirmed on fresh episodes."""

    generations: int | None = None
    max_evaluations: int | None = None
    max_steps: int | None = None
    max_time: float | None = None
    target: float | None = None
    goal: float | None = None
    goal_generations: int | None = None
    goal_episodes: int | None = None

    def table(self) -> dict[str, float]:
        """The keys that are set, as ``[stop]`` writes them."""
        return {key: value for key, value in asdict(self).items() if value is not None}

    def budget(self) -> dict[str, float]:
        """The budgets that are set (``{"generations": 500}``)."""
        return {key: value for key, value in self.table().items() if key in BUDGET_KEYS}

    def conditions(self) -> list[StopCondition | Callable]:
        """The stop conditions these settings make (one builder: :func:`blackbox.driver.stop.stop_conditions`)."""
        return stop_conditions(max_generations=self.generations, max_evaluations=self.max_evaluations,
                               max_steps=self.max_steps, max_time=self.max_time, target=self.target,
                               goal=self.goal, goal_generations=self.goal_generations,
                               goal_episodes=self.goal_episodes, require_budget=False)


@dataclass(frozen=True)
class Checkpointing:
    """The ``[checkpoint]`` table: generations between checkpoints (0: only at the end), how many to keep."""

    every: int = 10
    keep: int = 3


@dataclass(frozen=True)
class Logging:
    """The ``[log]`` table: TensorBoard event files, and the learning curve at the end."""

    tensorboard: bool = False
    plot: bool = True


@dataclass(frozen=True)
class ResolvedRun:
    """Every setting of one run, defaults filled in; each component bound with all its options."""

    strategy: Component
    problem: Component
    executor: Component
    stop: Stop = Stop()
    checkpoint: Checkpointing = Checkpointing()
    log: Logging = Logging()
    seed: int = 0
    evaluate_center: bool = True
    #: Sample generation g+1 before g is told (written into RUN/config.toml only when on).
    pipelined: bool = False
    preset: bool = True
    #: The run directory a config file asked for (never written into RUN/config.toml).
    out: str | None = None

    def component(self, kind: str) -> Component:
        """The strategy, problem or executor."""
        if kind not in KINDS:
            raise ConfigError(f"unknown component kind {kind!r}; choose one of {', '.join(KINDS)}")
        return getattr(self, kind)

    def to_dict(self) -> Table:
        """The run as ``RUN/config.toml`` holds it (``blackbox run --config`` repeats the run from it)."""
        out: Table = {"seed": self.seed, "evaluate_center": self.evaluate_center, "preset": self.preset}
        if self.pipelined:
            out["pipelined"] = True
        for kind in KINDS:
            component = self.component(kind)
            out[kind] = {"name": component.name, **component.options}
        out["stop"] = self.stop.table()
        out["checkpoint"] = {f.name: getattr(self.checkpoint, f.name) for f in fields(self.checkpoint)}
        out["log"] = {f.name: getattr(self.log, f.name) for f in fields(self.log)}
        return to_plain(out, drop_none=True)

    def label(self) -> str:
        """The problem's name and what tells its instances apart for people: ``gym:CartPole-v1``."""
        for key in ("env", "dataset", "function"):
            value = self.problem.options.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "auto":
                return f"{self.problem.name}:{value}"
        return self.problem.name


def _located(component: Component, exc: ConfigError) -> str:
    """Where the option a factory's error starts with was set ('' if it names none)."""
    return component.option_where.get(str(exc).split(" ", 1)[0], "")


def _build(kind: str, component: Component, **extra: Any) -> Any:
    try:
        return make(kind, component, **extra)
    except ConfigError as exc:
        place = _located(component, exc)
        raise type(exc)(f"{place + ':' if place else 'config'} [{kind}] {component.name}: {exc}") from None


def build_components(resolved: ResolvedRun) -> tuple[Strategy, Problem, Executor]:
    """Strategy, problem and executor of a resolved run (``x0`` from the problem if not set)."""
    problem = _build("problem", resolved.problem)
    extra: dict[str, Any] = {"dim": problem.dim, "seed": resolved.seed}
    if "x0" not in resolved.strategy.options:
        extra["x0"] = problem.initial_params(np.random.default_rng(resolved.seed))
    strategy = _build("strategy", resolved.strategy, **extra)
    executor = _build("executor", resolved.executor)
    return strategy, problem, executor
