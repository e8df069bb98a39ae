"""``blackbox`` in a subprocess with the ``faulty`` problem registered, and optional fault hooks.

Run as ``python -m tests.reliability.driver run ...`` / ``... resume RUN`` (the repository on PYTHONPATH). With
``CHECKPOINT_PAUSE=POINT:GENERATION:FLAGFILE`` in the environment, the process stops inside the
checkpoint write of GENERATION at POINT, writes FLAGFILE and sleeps, so that a test can SIGKILL it
exactly there. Points, in the order a checkpoint is written:

``arrays-partial`` (half of arrays.npz written), ``arrays-written``, ``state-partial`` (half of
state.json written), ``state-written`` (both files written, not yet renamed), ``renamed`` (the
folder renamed into place, the directory not yet flushed), ``pruning`` (an old checkpoint half
deleted), ``pruned`` (the old checkpoints deleted).

The hooks wrap functions of ``blackbox.store.checkpoint`` (its file writer and pruning) and of
``blackbox.files`` (the folder flush inside ``atomic_folder``) from outside: the shipped code has no
test hook.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from blackbox import files
from blackbox.cli import main  # noqa: E402
from blackbox.store import checkpoint as ck  # noqa: E402
from tests.reliability import fault_problems  # noqa: E402

POINTS = ("arrays-partial", "arrays-written", "state-partial", "state-written", "renamed", "pruning", "pruned")


def _pause(flag: str) -> None:
    Path(flag).write_text(str(os.getpid()))
    while True:
        time.sleep(1)


def install_pause(point: str, generation: int, flag: str) -> None:
    """Stop inside the checkpoint write of ``generation`` at ``point`` (see the module docstring)."""
    if point not in POINTS:
        raise SystemExit(f"unknown pause point {point!r}; one of {POINTS}")
    target = f"gen-{generation:06d}"
    write_file, fsync_dir, prune = ck.write_synced, files.fsync_dir, ck.prune_checkpoints

    def in_target(path: Path) -> bool:
        return path.parent.name.startswith(f".{target}.") or path.name == target

    def hooked_write(path: Path, data: bytes) -> None:
        if in_target(path) and point in ("arrays-partial", "state-partial") and path.name == point.split("-")[0] + (
                ".npz" if point.startswith("arrays") else ".json"):
            with open(path, "wb") as handle:
                handle.write(data[: len(data) // 2])
                handle.flush()
                os.fsync(handle.fileno())
            _pause(flag)
        write_file(path, data)
        if in_target(path) and point == "arrays-written" and path.name == "arrays.npz":
            _pause(flag)

    def hooked_fsync_dir(path: Path) -> None:
        fsync_dir(path)
        if point == "state-written" and path.name.startswith(f".{target}.") and path.name.endswith(".tmp"):
            _pause(flag)
        if point == "renamed" and path.name == "checkpoints" and (path / target).is_dir():
            _pause(flag)

    def hooked_prune(directory, keep):
        newest = ck.list_checkpoints(directory)[-1:]
        if newest and newest[0][1].name == target:
            found = ck.list_checkpoints(directory)
            doomed = [p for _, p in found[:-keep] if p != ck.best_checkpoint(directory)]
            if point == "pruning" and doomed:
                (doomed[0] / "arrays.npz").unlink()
                _pause(flag)
            removed = prune(directory, keep)
            if point == "pruned":
                _pause(flag)
            return removed
        return prune(directory, keep)

    ck.write_synced, files.fsync_dir, ck.prune_checkpoints = hooked_write, hooked_fsync_dir, hooked_prune


if __name__ == "__main__":
    fault_problems.register()
    pause = os.environ.get("CHECKPOINT_PAUSE")
    if pause:
        point, generation, flag = pause.split(":", 2)
        install_pause(point, int(generation), flag)
    sys.exit(main(sys.argv[1:]))
