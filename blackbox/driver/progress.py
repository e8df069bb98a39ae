"""A live progress display for runs (rich): generation, evaluations, steps, fitness, speed, ETA.

The bar measures progress toward whichever budget is nearest to running out (generations,
evaluations, environment steps or wall time), so the ETA is meaningful for any budget. It counts
from where a resumed run starts, not from zero.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from ..errors import StateError
from .loop import Callback, Record, Result, Run

__all__ = ["ProgressDisplay", "budget_fraction", "format_duration"]

_BUDGET_FIELDS = {"generations": "generation", "max_evaluations": "evaluations", "max_steps": "steps",
                  "max_time": "time"}


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _count(value: int) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return str(value)


def format_duration(seconds: float | None) -> str:
    """``1:02:03`` / ``2:03`` / ``-`` for unknown."""
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "-"
    seconds = int(round(max(seconds, 0.0)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def budget_fraction(record: Record | None, budget: dict[str, Any]) -> float | None:
    """How much of the nearest budget is spent (0..1), or None when no budget is known."""
    fractions = []
    for key, attr in _BUDGET_FIELDS.items():
        limit = budget.get(key)
        if limit:
            fractions.append(0.0 if record is None else getattr(record, attr) / float(limit))
    return min(1.0, max(fractions)) if fractions else None


class ProgressDisplay(Callback):
    """One bar for the run and the latest record's key figures beside it, with an ETA.

    ``budget`` maps ``generations`` / ``max_evaluations`` / ``max_steps`` / ``max_time`` to their
    limits; a bare integer is read as a number of generations (the older signature).
    """

    def __init__(self, budget: dict[str, Any] | int | None = None, console: Console | None = None):
        if budget is None or isinstance(budget, int):
            budget = {"generations": budget} if budget else {}
        self.budget = {k: v for k, v in budget.items() if k in _BUDGET_FIELDS and v}
        self.console = console or Console(stderr=True)
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._start_fraction = 0.0
        self._started = 0.0

    def on_start(self, run: Run) -> None:
        self._progress = Progress(
            TextColumn("[bold]gen {task.fields[generation]}"), BarColumn(bar_width=20),
            TextColumn("{task.percentage:>3.0f}%"), TextColumn("{task.fields[stats]}"),
            TextColumn("ETA {task.fields[eta]}"),
            console=self.console, transient=False,
        )
        self._progress.start()
        last = run.records[-1] if run.records else None
        self._start_fraction = budget_fraction(last, self.budget) or 0.0
        self._started = time.perf_counter()
        self._task = self._progress.add_task(
            # rich types completed as an int here, but takes a float (as in update())
            "run", total=1000, completed=1000 * self._start_fraction,  # type: ignore[arg-type]
            generation=run.strategy.generation, stats="", eta="-",
        )

    def on_generation(self, run: Run, record: Record) -> None:
        if self._progress is None or self._task is None:
            raise StateError("ProgressDisplay.on_generation needs on_start first (optimize() calls both)")
        fraction = budget_fraction(record, self.budget)
        eta = None
        if fraction is not None and fraction > self._start_fraction:
            spent = time.perf_counter() - self._started
            eta = spent * (1.0 - fraction) / (fraction - self._start_fraction)
        stats = (f"evals {_count(record.evaluations)}  steps {_count(record.steps)}  "
                 f"best {_fmt(record.best)}  center {_fmt(record.center)}  "
                 f"{record.generation_time * 1000:.0f} ms/gen")
        self._progress.update(
            self._task, completed=1000 * (fraction or 0.0), generation=record.generation, stats=stats,
            eta=format_duration(eta),
        )

    def on_end(self, run: Run, result: Result) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
