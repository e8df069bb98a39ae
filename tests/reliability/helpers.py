"""Shared tools of the reliability tests: subprocess drivers, process trees from /proc, run
comparisons, and the figures that ``benchmarks/reliability_figures.py`` collects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from blackbox.driver.logs import read_csv_records, read_jsonl_records
from blackbox.files import load_npz
from tests.helpers import interruptible, subprocess_env

#: The subprocess driver, run as ``python -m tests.reliability.driver`` (see ``subprocess_env``).
DRIVER = "tests.reliability.driver"
TIMINGS = ("time", "generation_time")


# -- figures --------------------------------------------------------------------------------------
def note(test: str, **figures: float | int | str) -> None:
    """Add ``figures`` (counts are summed, other values replaced) to the file named by
    ``BLACKBOX_RELIABILITY_FIGURES``, keyed by ``test``; a no-op when the variable is unset."""
    path = os.environ.get("BLACKBOX_RELIABILITY_FIGURES")
    if not path:
        return
    line = json.dumps({"test": test, **figures})
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


# -- processes ------------------------------------------------------------------------------------
def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` in the process tree."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def loky_workers(pid: int | None = None) -> list[int]:
    """Live loky worker processes below ``pid`` (default: this process), oldest first."""
    found = [p for p in descendants(pid or os.getpid()) if "popen_loky_posix" in cmdline(p) and alive(p)]
    return sorted(found)


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` (from /proc/PID/statm)."""
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def open_files(pid: int) -> int:
    """How many file descriptors ``pid`` holds."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_gone(pids, seconds: float = 10.0) -> list[int]:
    """Wait until none of ``pids`` is alive; return those still alive after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


# -- subprocess drivers ---------------------------------------------------------------------------
def driver(args, env=None, wait=True, timeout=300, new_session=False):
    """``blackbox ARGS`` in a subprocess with the ``faulty`` problem registered."""
    full_env = subprocess_env(env)
    command = [sys.executable, "-m", DRIVER, *map(str, args)]
    if wait:
        return subprocess.run(command, capture_output=True, text=True, env=full_env, timeout=timeout)
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
                            start_new_session=new_session, preexec_fn=interruptible)


def wait_for(path: Path, process: subprocess.Popen | None = None, seconds: float = 120.0) -> None:
    """Wait until ``path`` exists (failing early if ``process`` ends first)."""
    deadline = time.monotonic() + seconds
    while not Path(path).exists():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process ended ({process.returncode}) before {path} appeared:\n"
                                 f"{process.stderr.read() if process.stderr else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {seconds} s")
        time.sleep(0.005)


# -- comparing runs -------------------------------------------------------------------------------
def _same_nan(value):
    """NaN as a marker string, so that two records holding NaN compare equal."""
    return "nan" if isinstance(value, float) and value != value else value


def without_timings(rows):
    return [{k: _same_nan(v) for k, v in r.items() if k not in TIMINGS} for r in rows]


def comparable(records):
    """In-memory Records without their wall-clock fields."""
    return without_timings([r.as_dict() for r in records])


def assert_same_run_dir(a: Path, b: Path) -> None:
    """Two run directories hold the same records (minus timings) and bit-identical solutions."""
    a, b = Path(a), Path(b)
    assert without_timings(read_csv_records(a / "records.csv")) == without_timings(read_csv_records(b / "records.csv"))
    assert without_timings(read_jsonl_records(a / "records.jsonl")) == without_timings(
        read_jsonl_records(b / "records.jsonl"))
    sa, sb = load_npz(a / "solution.npz"), load_npz(b / "solution.npz")
    for key in ("center", "best_params", "best_fitness"):
        assert sa[key].tobytes() == sb[key].tobytes(), key


def assert_same_result(result, reference) -> None:
    """Two in-memory results: same records minus timings, bit-identical center and best."""
    assert comparable(result.records) == comparable(reference.records)
    assert result.center.tobytes() == reference.center.tobytes()
    assert np.asarray(result.best_params).tobytes() == np.asarray(reference.best_params).tobytes()
