"""Bounds on what worker processes may cost: how many there are, how long they outlive the driver,
how much of their own memory they may hold.

- :func:`check_worker_count`: a pool made by blackbox (loky, ``futures:kind=...``) gets at most
  ``MAX_WORKERS_PER_CORE`` workers per core unless the user says ``oversubscribe=true``: a typo
  such as ``workers=100000`` would otherwise spawn processes until the machine gives out.
- :func:`watch_parent`: a worker process exits within about a second once the process that
  started it is gone (the driver SIGKILLed or crashed), instead of idling on with its memory.
- :func:`start_worker`: a pool's initializer: ``watch_parent``, and Ctrl-C left to the driver (a
  terminal's Ctrl-C reaches the whole process group; the driver stops the workers itself).
- :func:`private_memory`: a process's own memory (anonymous resident pages and swap), leaving out
  the pages of files it maps, such as the noise table that every worker shares; what loky's
  ``max_worker_memory`` counts.
- :func:`quiet_resource_tracker`: the resource tracker that loky and multiprocessing start cleans up
  the semaphores of a SIGKILLed driver without printing a two-line warning about each "leak".
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from ..errors import ConfigError

__all__ = ["MAX_WORKERS_PER_CORE", "available_cores", "check_worker_count", "watch_parent", "start_worker",
           "private_memory", "quiet_resource_tracker"]

#: Workers per core beyond which a pool made here is refused unless ``oversubscribe=true``.
MAX_WORKERS_PER_CORE = 4

#: Seconds between two looks of a worker at its parent.
PARENT_POLL_SECONDS = 0.5

_watching: list[int] = []  # the pid whose watcher runs in this process (at most one)


def available_cores() -> int:
    """The cores this process may use (affinity and cgroup quotas included, as loky counts them)."""
    try:
        from loky import cpu_count

        return max(1, int(cpu_count()))
    except Exception:  # noqa: BLE001 - loky is a core dependency; this is a fallback
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def check_worker_count(executor: str, workers: int, oversubscribe: bool, units: str = "processes") -> int:
    """``workers`` for a pool the executor makes itself, refused above ``MAX_WORKERS_PER_CORE`` per core
    unless ``oversubscribe``. ``executor`` is the spec's start (``futures:kind=thread``), ``units`` what
    a worker is (``processes`` or ``threads``)."""
    cores = available_cores()
    limit = MAX_WORKERS_PER_CORE * cores
    if workers > limit and not oversubscribe:
        sep = "," if ":" in executor else ":"
        raise ConfigError(
            f"{executor}{sep}workers={workers} would start {workers} {units} on {cores} core(s); more than "
            f"{MAX_WORKERS_PER_CORE} per core ({limit}) is refused unless you ask for it with "
            f"{executor}{sep}workers={workers},oversubscribe=true (e.g. for evaluations that mostly wait)"
        )
    return workers


def _watch(parent: int) -> None:
    while True:
        time.sleep(PARENT_POLL_SECONDS)
        if os.getppid() != parent:  # reparented: the process that started this worker is gone
            os._exit(1)


def watch_parent(parent: int | None = None) -> None:
    """In a worker process: exit within ``PARENT_POLL_SECONDS`` once its parent (the driver) is gone.

    ``parent`` is the driver's pid, as the driver passed it when it started the worker (default:
    the parent now), so that a worker started just after the driver died exits at once. Started
    once per process (a pool's initializer), as a daemon thread; a worker hung in an evaluation
    exits as well. Call it only in processes that blackbox's executors started, never in the driver.
    """
    if _watching:
        return
    parent = os.getppid() if parent is None else int(parent)
    if os.getppid() != parent:
        os._exit(1)
    _watching.append(parent)
    threading.Thread(target=_watch, args=(parent,), name="blackbox-watch-parent", daemon=True).start()


def start_worker(parent: int | None = None) -> None:
    """Initializer of a pool's worker process: ignore SIGINT and :func:`watch_parent` ``parent``.

    A Ctrl-C in a terminal goes to every process of the foreground group, workers included. The
    driver answers it (it kills its workers and says how to resume); a worker that raised
    KeyboardInterrupt between two tasks would only print a traceback of its own beside that line.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(parent)


#: The warning filter the resource trackers start with: their messages all begin "resource_tracker:"
#: (a ``-W`` message is a literal prefix and cannot hold the colon).
TRACKER_WARNINGS = "ignore:resource_tracker:UserWarning"


def quiet_resource_tracker() -> None:
    """Start the resource trackers of loky and multiprocessing with their warnings off.

    After a driver SIGKILL, the tracker (a process of its own that outlives the driver and shares its
    terminal) unlinks the semaphores the driver left, as it should, but first prints "There appear to
    be N leaked semaphore objects to clean up at shutdown" in Python's two-line warning format. Both
    trackers are started with the interpreter flags of this process (``sys.warnoptions`` included),
    so a filter added here reaches them (and the workers, where it matches nothing of theirs); this
    process's own filters, read at start-up, do not change."""
    if TRACKER_WARNINGS not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_WARNINGS)


def private_memory(pid: int | str = "self") -> int | None:
    """Bytes of ``pid``'s own memory: anonymous resident pages plus swap (``Anonymous + Swap`` of
    ``/proc/PID/smaps_rollup``, exact; else ``RssAnon + VmSwap`` of ``/proc/PID/status``, which the
    kernel updates lazily); None where ``/proc`` does not say (not Linux)."""
    for name, keys in (("smaps_rollup", ("Anonymous", "Swap")), ("status", ("RssAnon", "VmSwap"))):
        try:
            with open(f"/proc/{pid}/{name}", encoding="ascii") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line and not line[0].isdigit())
        except (OSError, ValueError):
            continue
        if keys[0] in fields:
            try:
                return sum(int(fields[key].split()[0]) * 1024 for key in keys if key in fields)
            except ValueError:
                continue
    return None
