"""Shared helpers for the benchmark scripts: timing, the memory floor, machine and version facts."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np


def timed(fn: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def memory_floor(values: int, repeats: int = 3) -> float:
    """Seconds to stream ``values`` float32 through memory once: fastest of a sum, a max, a copy."""
    buffer = np.random.default_rng(1).standard_normal(values, dtype=np.float32)
    target = np.empty_like(buffer)
    candidates = [lambda: buffer.sum(), lambda: buffer.max(), lambda: np.copyto(target, buffer)]
    return min(timed(fn, repeats) for fn in candidates)


def version(module: str) -> str:
    """Installed version of ``module`` or 'not installed'. Read from the distribution's metadata when it
    goes by the module's name, without importing it: an import can change the process (rl_zoo3's replaces
    gymnasium's TimeLimit for every environment made after it)."""
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        mod = importlib.import_module(module)
    except Exception:  # noqa: BLE001
        return "not installed"
    return str(getattr(mod, "__version__", None) or "?")


def machine() -> str:
    """One line about this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        mem = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
    except (ValueError, OSError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}, {platform.system()}"


def report(lines: list[str], markdown: str | None) -> None:
    """Print a benchmark's markdown lines, and write them to ``markdown`` when a path is given."""
    text = "\n".join(lines)
    print(text)
    if markdown:
        with open(markdown, "w") as handle:
            handle.write(text + "\n")
