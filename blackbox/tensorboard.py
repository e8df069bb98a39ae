"""TensorBoard event files for a run (``--tensorboard``): tensorboardX, else torch's writer.

Both are optional and imported only when asked for. Three folders, one per x axis, because
TensorBoard has one step axis per run: ``generations/`` (every record field), ``evaluations/`` and
``steps/`` (fitness against those counters). A resumed run passes ``purge_step`` so that TensorBoard
drops the events the interrupted run wrote after its checkpoint.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .loop import Callback, Record, Result, Run

__all__ = ["TensorBoardLog", "summary_writer_class"]

_FITNESS = ("best", "mean", "median", "worst", "center", "best_ever")
_SEARCH = ("sigma", "update_norm", "center_rank", "above_mean")
_COUNTERS = ("evaluations", "steps", "time", "generation_time")


def summary_writer_class() -> Any:
    """The SummaryWriter class to use; ConfigError naming the extra to install if there is none."""
    try:
        from tensorboardX import SummaryWriter

        return SummaryWriter
    except ImportError:
        pass
    try:
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter
    except ImportError:
        pass
    raise ConfigError(
        "--tensorboard needs tensorboardX (pip install 'blackbox-es[tensorboard]') "
        "or torch together with the tensorboard package"
    )


class TensorBoardLog(Callback):
    """Writes each record as TensorBoard scalars under ``logdir``."""

    def __init__(self, logdir: str | Path, resume_from: Record | None = None):
        self.logdir = Path(logdir)
        self.writer_class = summary_writer_class()
        self.resume_from = resume_from
        self._writers: dict[str, Any] = {}

    def _writer(self, axis: str) -> Any:
        if axis not in self._writers:
            purge = None
            if self.resume_from is not None:
                purge = {"generations": self.resume_from.generation, "evaluations": self.resume_from.evaluations,
                         "steps": self.resume_from.steps}[axis] + 1
            # A unique suffix: two sessions within one second would otherwise share a file name.
            suffix = f".{os.getpid()}.{time.time_ns()}"
            self._writers[axis] = self.writer_class(str(self.logdir / axis), purge_step=purge, filename_suffix=suffix)
        return self._writers[axis]

    def on_start(self, run: Run) -> None:
        self._writer("generations")

    def on_generation(self, run: Run, record: Record) -> None:
        by_generation = self._writer("generations")
        for group, names in (("fitness", _FITNESS), ("search", _SEARCH), ("run", _COUNTERS)):
            for name in names:
                value = getattr(record, name)
                if value is not None:
                    by_generation.add_scalar(f"{group}/{name}", float(value), record.generation)
        for axis in ("evaluations", "steps"):
            step = getattr(record, axis)
            if axis == "steps" and step == 0:
                continue
            writer = self._writer(axis)
            for name in ("center", "best", "mean", "best_ever"):
                value = getattr(record, name)
                if value is not None and not math.isnan(value):
                    writer.add_scalar(f"fitness/{name}", float(value), int(step))

    def on_end(self, run: Run, result: Result) -> None:
        for writer in self._writers.values():
            writer.flush()
            writer.close()
        self._writers = {}
