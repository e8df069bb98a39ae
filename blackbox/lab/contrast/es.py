"""The evolution-strategy side of the contrast: ``blackbox.optimize`` with a strategy by name.

The strategy starts from the same initial weights as the backpropagation baseline. After the
generations an :class:`EvalSchedule` picks, a callback scores the strategy's center (the current
solution, not the best perturbed member) on the test split; the driver's own clock, which leaves
callbacks out, gives the training time, and its step counter (the problem reports the examples
each member saw) gives the forward passes: members x examples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...driver.loop import Callback, Record, Result, Run, optimize
from ...registry.options import resolved_config
from ...registry.plugins import make_strategy, strategies
from ...registry.spec import parse_spec
from .curves import Curve, EvalSchedule

__all__ = ["ES_DEFAULTS", "AccuracyTracker", "train_es", "es_options"]

#: Settings tuned for supervised learning of a few thousand weights (the paper's RL defaults,
#: sigma 0.02 and lr 0.01, also work, more slowly); any of them can be overridden.
ES_DEFAULTS: dict[str, dict[str, object]] = {
    "openai-es": {"popsize": 50, "sigma": 0.05, "lr": 0.02, "weight_decay": 0.0},
}


class AccuracyTracker(Callback):
    """Scores the strategy's center on the test split on schedule; stops the run at ``target``."""

    def __init__(self, problem, curve: Curve, schedule: EvalSchedule, target: float | None = None):
        self.problem = problem
        self.curve = curve
        self.schedule = schedule
        self.target = target
        self.last = 0
        self.reason = ""

    def _measure(self, run: Run, generation: int, time: float, passes: int) -> None:
        score = self.problem.split_score(run.strategy.center)
        self.curve.add(generation, time, passes, score["accuracy"], score["loss"])
        self.last = generation
        if not math.isfinite(score["loss"]):
            self.reason = "diverged (non-finite test loss)"
        elif self.target is not None and score["accuracy"] >= self.target:
            self.reason = f"test accuracy {score['accuracy']:.4f} >= target {self.target:g}"

    def on_start(self, run: Run) -> None:
        if not self.curve.iterations:
            self._measure(run, run.strategy.generation, run.elapsed, run.steps)

    def on_generation(self, run: Run, record: Record) -> bool:
        if self.schedule.due(record.generation, self.last):
            self._measure(run, record.generation, record.time, record.steps)
        return bool(self.reason)

    def on_end(self, run: Run, result: Result) -> None:
        if self.curve.iterations and self.curve.iterations[-1] != result.generations:
            self._measure(run, result.generations, result.wall_time, result.steps)
        self.curve.stop_reason = self.reason or result.stop_reason


def es_options(strategy: str, settings: Mapping[str, object] | None = None) -> tuple[str, dict[str, object]]:
    """The strategy's name and options: this job's tuned defaults, then the spec's, then ``settings``."""
    parsed = parse_spec(strategy)
    return parsed.name, {**ES_DEFAULTS.get(parsed.name, {}), **parsed.kwargs, **(settings or {})}


def train_es(
    problem,
    x0: np.ndarray,
    strategy: str = "openai-es",
    settings: Mapping[str, object] | None = None,
    *,
    executor="serial",
    max_time: float | None = None,
    max_generations: int | None = None,
    target: float | None = None,
    seed: int = 0,
    schedule: EvalSchedule | None = None,
) -> tuple[Curve, Result, dict[str, object]]:
    """Run the strategy on ``problem`` from ``x0``; returns the curve, the driver's Result and the
    strategy's resolved configuration."""
    schedule = schedule or EvalSchedule()
    name, options = es_options(strategy, settings)
    es = make_strategy(name, dim=problem.dim, x0=x0, seed=seed, **options)
    config = {"name": name, **resolved_config(strategies.load(name), (), {**options, "dim": problem.dim, "seed": seed},
                                              kind="strategy", name=name)}
    config.pop("x0", None)
    curve = Curve(method=f"ES ({name})", unit="generation", pass_kind="forward")
    tracker = AccuracyTracker(problem, curve, schedule, target)
    result = optimize(es, problem, executor, generations=max_generations, max_time=max_time, seed=seed,
                      evaluate_center=False, callbacks=[tracker])
    return curve, result, config
