"""A live progress display for runs (rich): generation, evaluations, steps, fitness, speed, ETA."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .loop import Callback, Record, Result, Run

__all__ = ["ProgressDisplay"]


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


class ProgressDisplay(Callback):
    """Shows one bar for the run, with the latest record's key figures beside it."""

    def __init__(self, total_generations: int | None = None, console: Console | None = None):
        self.total = total_generations
        self.console = console or Console(stderr=True)
        self._progress: Progress | None = None
        self._task = None

    def on_start(self, run: Run) -> None:
        self._progress = Progress(
            TextColumn("[bold]gen"), MofNCompleteColumn(), BarColumn(bar_width=24),
            TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=self.console, transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "run", total=self.total, completed=run.strategy.generation, stats=""
        )

    def on_generation(self, run: Run, record: Record) -> None:
        stats = (f"evals {record.evaluations}  steps {record.steps}  best {_fmt(record.best)}  "
                 f"center {_fmt(record.center)}  {record.generation_time * 1000:.0f} ms/gen")
        self._progress.update(self._task, completed=record.generation, stats=stats)

    def on_end(self, run: Run, result: Result) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
