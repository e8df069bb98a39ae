"""Learning curves (test accuracy against training wall time and work done) and their comparison.

Both methods are measured the same way: test accuracy of the current solution on the held-out
split at the points of one :class:`EvalSchedule`, against the training time spent so far
(evaluations excluded) and the examples pushed through the network so far. The comparison takes
the accuracy level that both curves reach (the target when both pass it, else the lower of the
two best accuracies) and divides ES's time and work to first reach it by backpropagation's.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from ..._validate import check_float, check_int
from ...errors import ConfigError

__all__ = ["EvalSchedule", "Curve", "Comparison", "compare", "DEFAULT_MILESTONES"]

DEFAULT_MILESTONES = (0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99)


@dataclass(frozen=True)
class EvalSchedule:
    """Evaluate at iterations 0..``dense``, then whenever the iteration has grown by ``growth``.

    A geometric schedule keeps the relative error of a time-to-accuracy under ``growth - 1``
    (2% by default) on both sides while the number of test evaluations grows only with the
    logarithm of the run's length.
    """

    dense: int = 50
    growth: float = 1.02

    def __post_init__(self):
        check_int("dense", self.dense, minimum=0)
        check_float("growth", self.growth, positive=True)
        if self.growth <= 1.0:
            raise ConfigError(f"growth must be > 1 (the factor between evaluated iterations), got {self.growth}")

    def due(self, iteration: int, last: int) -> bool:
        """True when ``iteration`` should be evaluated, ``last`` being the last evaluated one."""
        return iteration <= self.dense or iteration >= math.ceil(last * self.growth)


@dataclass
class Curve:
    """One method's measurements; the lists are parallel, one entry per test evaluation."""

    method: str
    unit: str  # what one iteration is: "generation" or "step"
    pass_kind: str  # "forward" (ES) or "forward+backward" (backprop)
    iterations: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    passes: list[int] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    stop_reason: str = ""

    def add(self, iteration: int, time: float, passes: int, accuracy: float, loss: float) -> None:
        self.iterations.append(int(iteration))
        self.times.append(float(time))
        self.passes.append(int(passes))
        self.accuracies.append(float(accuracy))
        self.losses.append(float(loss))

    @property
    def best_accuracy(self) -> float:
        return max(self.accuracies) if self.accuracies else math.nan

    @property
    def final(self) -> dict[str, float]:
        """The last measurement (the run's end)."""
        return {"iteration": self.iterations[-1], "time": self.times[-1], "passes": self.passes[-1],
                "accuracy": self.accuracies[-1], "loss": self.losses[-1]}

    def first_reaching(self, level: float) -> int | None:
        """Index of the first measurement with accuracy >= ``level`` (None if never)."""
        return next((i for i, a in enumerate(self.accuracies) if a >= level), None)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Comparison:
    """Time and work of each method to first reach ``level``, and ES's slowdown ratios."""

    level: float
    level_reason: str
    es_time: float | None
    bp_time: float | None
    es_passes: int | None
    bp_passes: int | None
    time_ratio: float | None
    pass_ratio: float | None
    milestones: list[dict[str, float | int | None]]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return a / b


def _at(curve: Curve, level: float) -> tuple[float | None, int | None]:
    i = curve.first_reaching(level)
    return (None, None) if i is None else (curve.times[i], curve.passes[i])


def compare(es: Curve, bp: Curve, target: float | None = None,
            milestones: tuple[float, ...] = DEFAULT_MILESTONES) -> Comparison:
    """Compare at the accuracy both reach: ``target`` if both pass it, else the lower best accuracy."""
    best_es, best_bp = es.best_accuracy, bp.best_accuracy
    if target is not None and best_es >= target and best_bp >= target:
        level, reason = float(target), "target reached by both"
    elif best_es <= best_bp:
        level, reason = best_es, "best accuracy of ES (backprop passed it too)"
    else:
        level, reason = best_bp, "best accuracy of backprop (ES passed it too)"
    es_time, es_passes = _at(es, level)
    bp_time, bp_passes = _at(bp, level)
    rows = []
    for m in sorted(set(milestones) | {level}):
        if m > level:
            continue
        (et, ep), (bt, bpp) = _at(es, m), _at(bp, m)
        rows.append({"accuracy": m, "es_time": et, "bp_time": bt, "es_passes": ep, "bp_passes": bpp,
                     "time_ratio": _ratio(et, bt), "pass_ratio": _ratio(ep, bpp)})
    return Comparison(
        level=level, level_reason=reason, es_time=es_time, bp_time=bp_time, es_passes=es_passes,
        bp_passes=bp_passes, time_ratio=_ratio(es_time, bp_time), pass_ratio=_ratio(es_passes, bp_passes),
        milestones=rows,
    )
