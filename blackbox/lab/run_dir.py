"""What a run directory holds, and what ``--overwrite`` may delete: only what blackbox wrote.

A folder is a blackbox run when its ``config.toml`` is a run config as ``blackbox run`` writes it
(the resolved run: every component named, the seed, the checkpoint and log tables) and every other
entry is one blackbox writes: the record files, ``result.json``, ``solution.npz``, ``curve.png``,
``blackbox.lock``, the temporary files of an interrupted atomic write, ``checkpoints/`` holding
checkpoint folders (``gen-NNNNNN`` with ``state.json`` and ``arrays.npz``, their half-written
``.gen-*.tmp`` / ``.old`` siblings, ``corrupt-gen-*`` set aside by ``blackbox resume``) and
``tensorboard/`` holding event files. Anything else (a folder without such a config, or with files
blackbox did not write) is refused whatever the flags, and nothing in it is deleted.

Replacing a run (``--overwrite``) deletes only those entries, under the run's lock
(:mod:`blackbox.store.lock`), and keeps the checkpoints set aside as unreadable: no advice blackbox
prints can destroy what it set aside.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ..config.run import load_toml, read_run_config
from ..errors import BlackboxError, ConfigError
from ..store.checkpoint import is_ours
from ..store.lock import LOCK_FILE

__all__ = ["RUN_FILES", "RUN_DIRS", "run_config_fault", "foreign_entries", "set_aside_entries", "clear_run",
           "is_empty_for_a_run", "replace_fault"]

#: The files of a run directory, as blackbox writes them.
RUN_FILES = ("config.toml", "records.csv", "records.jsonl", "result.json", "solution.npz", "curve.png")
#: Its folders.
RUN_DIRS = ("checkpoints", "tensorboard")
#: A config.toml larger than this is not one blackbox wrote (resolved configs are a few kilobytes).
MAX_CONFIG_BYTES = 2**20

_SET_ASIDE = re.compile(r"^corrupt-gen-\d+(\.\d+)?$")
_TENSORBOARD_AXES = ("generations", "evaluations", "steps")
_EVENTS = "events.out.tfevents."
#: The keys a resolved run config always has (``ResolvedRun.to_dict()``).
_RESOLVED_TABLES = ("strategy", "problem", "executor", "stop", "checkpoint", "log")


def _temp_of_run_file(name: str) -> bool:
    """A temporary file left by an interrupted atomic write of a run file (``.records.csv.x1y2.tmp``)."""
    return name.endswith(".tmp") and any(name.startswith(f".{run_file}.") for run_file in RUN_FILES)


def run_config_fault(path: Path) -> str | None:
    """Why ``path`` is not a run config that ``blackbox run`` wrote, or None when it is one."""
    try:
        if not path.is_file():
            return "it has no config.toml" if not path.exists() else "its config.toml is not a regular file"
        if path.stat().st_size > MAX_CONFIG_BYTES:
            return f"its config.toml is larger than {MAX_CONFIG_BYTES} bytes"
        doc = load_toml(path)
        read_run_config(doc)
    except (OSError, BlackboxError) as exc:
        return f"its config.toml is not a blackbox run config ({exc})"
    missing = [key for key in _RESOLVED_TABLES if not isinstance(doc.data.get(key), dict)]
    if "seed" not in doc.data:
        missing.insert(0, "seed")
    if missing or not all(isinstance(doc.data[k].get("name"), str) for k in ("strategy", "problem", "executor")):
        shown = ", ".join(missing) if missing else "the component names"
        return f"its config.toml is not a run config as blackbox run writes it (it lacks {shown})"
    return None


def _listing(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def foreign_entries(out: Path) -> list[str]:
    """The entries of ``out`` (relative paths) that blackbox did not write."""
    foreign = []
    for entry in _listing(out):
        name = entry.name
        if entry.is_symlink():
            foreign.append(name)
        elif name in RUN_FILES or name == LOCK_FILE or _temp_of_run_file(name):
            if not entry.is_file():
                foreign.append(name)
        elif name == "checkpoints":
            if not entry.is_dir():
                foreign.append(name)
                continue
            for checkpoint in _listing(entry):
                if not is_ours(checkpoint):
                    inside = [f"checkpoints/{checkpoint.name}/{e.name}" for e in _listing(checkpoint)
                              if e.name not in ("state.json", "arrays.npz", "x")]
                    foreign += inside if checkpoint.is_dir() and inside else [f"checkpoints/{checkpoint.name}"]
        elif name == "tensorboard":
            if not entry.is_dir():
                foreign.append(name)
                continue
            for axis in _listing(entry):
                if axis.name not in _TENSORBOARD_AXES or not axis.is_dir() or axis.is_symlink():
                    foreign.append(f"tensorboard/{axis.name}")
                    continue
                foreign += [f"tensorboard/{axis.name}/{e.name}" for e in _listing(axis)
                            if not (e.name.startswith(_EVENTS) and e.is_file() and not e.is_symlink())]
        else:
            foreign.append(name)
    return foreign


def set_aside_entries(out: Path) -> list[str]:
    """The checkpoints ``blackbox resume`` set aside as unreadable (``checkpoints/corrupt-gen-*``)."""
    return [f"checkpoints/{e.name}" for e in _listing(out / "checkpoints") if _SET_ASIDE.match(e.name)]


def is_empty_for_a_run(out: Path) -> bool:
    """True when ``out`` holds nothing a run could lose: no entries but a lock file and empty run folders
    (a run killed before it wrote its config, or a mount point for the checkpoints)."""
    for entry in _listing(out):
        if entry.name == LOCK_FILE and entry.is_file():
            continue
        if entry.name in RUN_DIRS and entry.is_dir() and not entry.is_symlink() and not _listing(entry):
            continue
        return False
    return True


def replace_fault(out: Path) -> str | None:
    """Why ``out`` can never be replaced by a run (even with ``--overwrite``), or None: it is missing,
    empty for a run, or a blackbox run that holds only what blackbox wrote."""
    if out.exists() and not out.is_dir():
        return "it is not a directory"
    if not out.exists() or is_empty_for_a_run(out):
        return None
    fault = run_config_fault(out / "config.toml")
    if fault is not None:
        return f"it is not a blackbox run directory ({fault})"
    foreign = foreign_entries(out)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" (and {len(foreign) - 5} more)" if len(foreign) > 5 else "")
        return f"it holds files blackbox did not write ({shown})"
    return None


def clear_run(out: Path) -> None:
    """Delete what blackbox wrote in the run directory ``out`` (not the lock, not the checkpoints set
    aside); the caller holds the run's lock and has checked that nothing else is there."""
    foreign = foreign_entries(out)
    if foreign:  # checked again under the lock: nothing else may have appeared since
        raise ConfigError(f"{out} now holds files blackbox did not write ({', '.join(foreign[:5])}); "
                          f"nothing was deleted")
    for entry in _listing(out):
        if entry.name in RUN_FILES or _temp_of_run_file(entry.name):
            entry.unlink(missing_ok=True)
    for entry in _listing(out / "checkpoints"):
        if not _SET_ASIDE.match(entry.name):
            shutil.rmtree(entry)
    for axis in _listing(out / "tensorboard"):
        for events in _listing(axis):
            events.unlink(missing_ok=True)
        axis.rmdir()
