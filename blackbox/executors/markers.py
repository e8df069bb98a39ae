"""Task start markers: how a driver learns which worker runs a task since when, to kill it past a timeout.

A worker writes ``running-<task id>`` (its pid and the start time) just before it evaluates, in a
folder of the run on this machine, and removes it when done. The driver reads the markers of its
running tasks and SIGKILLs the worker of each task older than the timeout (loky, and the
``futures`` executor's own process pool): a file, so that a worker killed at any moment leaves
nothing locked behind.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import time
from pathlib import Path
from typing import TypeVar

#: What the tasks' futures hold (the markers do not look at it).
T = TypeVar("T")

__all__ = ["marker_file", "mark_started", "mark_finished", "kill_overdue"]


def marker_file(folder: str | Path, task_id: int) -> Path:
    """The marker of task ``task_id`` in the run's ``folder``."""
    return Path(folder) / f"running-{task_id}"


def mark_started(path: Path) -> None:
    """In the worker: this process starts the task now."""
    path.write_text(f"{os.getpid()} {time.time()!r}")


def mark_finished(path: Path) -> None:
    """In the worker: the task is over (its outcome is on its way)."""
    path.unlink(missing_ok=True)


def kill_overdue(folder: str | Path, task_ids: dict[cf.Future[T], int], running: list[cf.Future[T]],
                 timeout: float) -> list[cf.Future[T]]:
    """SIGKILL the worker of every task of ``running`` started more than ``timeout`` seconds ago;
    return those tasks (``task_ids`` maps each future to its task id)."""
    now = time.time()
    hung = []
    for future in running:
        marker = marker_file(folder, task_ids[future])
        try:
            pid_text, started = marker.read_text().split()
        except (OSError, ValueError):
            continue  # not started yet, or just finished
        if now - float(started) > timeout and not future.done():
            hung.append(future)
            marker.unlink(missing_ok=True)
            try:
                os.kill(int(pid_text), signal.SIGKILL)
            except ProcessLookupError:
                pass
    return hung
