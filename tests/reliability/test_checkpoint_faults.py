"""The driver killed while it writes a checkpoint, and a disk that fills up: the next
``blackbox resume`` finds a valid checkpoint and finishes bit-identically to a clean run."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from blackbox.cli import main
from blackbox.driver.logs import read_csv_records
from blackbox.store import checkpoint as ck
from tests.helpers import subprocess_env
from tests.reliability.driver import POINTS
from tests.reliability.helpers import DRIVER, assert_same_run_dir, driver, note, wait_for

SEED, GENERATIONS, EVERY = 5, 20, 4


def run_args(out, generations=GENERATIONS, every=EVERY, keep=2):
    return ["run", "--strategy", "openai-es:popsize=10,sigma=0.1", "--problem", "faulty:dim=4", "--seed", str(SEED),
            "--generations", str(generations), "--checkpoint-every", str(every), "--keep", str(keep), "--no-plot",
            "--quiet", "--out", str(out)]


@pytest.fixture(scope="module")
def clean(faulty, tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "run"
    assert main(run_args(out)) == 0
    return out


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "checkpoints").iterdir() if not ck._NAME.match(p.name))


# -- SIGKILL inside the write ---------------------------------------------------------------------
@pytest.mark.parametrize("point", POINTS)
def test_killed_inside_a_checkpoint_write_then_resumed(faulty, clean, tmp_path, point, capsys):
    """The driver stops at ``point`` of writing gen-000012 and is SIGKILLed there."""
    out, flag = tmp_path / "run", tmp_path / "paused"
    process = driver(run_args(out), env={"CHECKPOINT_PAUSE": f"{point}:12:{flag}"}, wait=False)
    try:
        wait_for(flag, process, seconds=60)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    assert not (out / "result.json").exists()
    written = point in ("renamed", "pruning", "pruned")
    expected = 12 if written else 8
    assert ck.latest_checkpoint(out / "checkpoints").generation == expected
    if point in ("arrays-partial", "state-partial", "arrays-written", "state-written"):
        assert [name for name in leftovers(out) if name.startswith(".gen-000012.")]  # the half-written folder
    capsys.readouterr()
    assert main(["resume", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["resumed_from"] == expected and summary["finished"] and "warning" not in captured.err
    assert leftovers(out) == []  # the half-written folder was cleaned up
    assert_same_run_dir(clean, out)
    note("driver SIGKILLed inside a checkpoint write", faults=1, runs=1, identical=1, point=point)


@pytest.mark.reliability_long
def test_killed_at_random_moments_with_a_checkpoint_every_generation(faulty, tmp_path):
    """Kill the driver (and each resume after it) at moments drawn from a seeded RNG, with a
    checkpoint written every generation, then let the last resume finish; compare with a clean run.

    A moment is a random generation (the kill follows a random 0-30 ms after the run has written
    that generation's record), so the number of kills does not depend on the machine's speed.
    """
    clean_dir = tmp_path / "clean"
    assert main(run_args(clean_dir, generations=300, every=1, keep=2)) == 0
    rng = np.random.default_rng(2024)
    targets = sorted(int(g) for g in rng.choice(np.arange(5, 295), size=30, replace=False))
    out = tmp_path / "run"
    args = run_args(out, generations=300, every=1, keep=2)
    kills = in_write = 0
    for target in targets:
        process = driver(args, env={"FAULTY_DELAY": "0.002"}, wait=False)
        try:
            while process.poll() is None and _records_written(out) < target:
                time.sleep(0.002)
            time.sleep(float(rng.uniform(0.0, 0.03)))
            assert process.poll() is None, process.stderr.read()  # still running: the kill lands
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        kills += 1
        in_write += bool(leftovers(out))
        ck.latest_checkpoint(out / "checkpoints")  # always a valid one
        args = ["resume", str(out), "--quiet"]
    done = driver(args)
    assert done.returncode == 0, done.stderr
    assert_same_run_dir(clean_dir, out)
    note("driver SIGKILLed at random moments", faults=kills, runs=1, identical=1, kills_inside_write=in_write)


def _records_written(out: Path) -> int:
    try:
        return max(0, len((out / "records.csv").read_bytes().splitlines()) - 1)
    except OSError:
        return 0


# -- disk full --------------------------------------------------------------------------------------
def test_disk_full_while_checkpointing_is_a_clear_error_and_keeps_the_previous_checkpoint(
        faulty, clean, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    real_write = ck.write_synced

    def full_disk(path, data):
        if path.parent.name.startswith(".gen-000012."):
            with open(path, "wb") as handle:
                handle.write(data[:100])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(path, data)

    monkeypatch.setattr(ck, "write_synced", full_disk)
    assert main(run_args(out)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert (f"blackbox run: error: could not write checkpoint gen-000012 in {out / 'checkpoints'}: "
            f"[Errno {errno.ENOSPC}] No space left on device") in err, err
    assert "the previous checkpoint gen-000008 is intact" in err
    assert ck.latest_checkpoint(out / "checkpoints").generation == 8 and leftovers(out) == []
    result = json.loads((out / "result.json").read_text())
    assert result["stop_reason"].startswith("error: CheckpointError: could not write checkpoint gen-000012")
    monkeypatch.setattr(ck, "write_synced", real_write)  # space freed
    assert main(["resume", str(out), "--quiet"]) == 0
    assert_same_run_dir(clean, out)
    note("disk full while checkpointing (patched write)", faults=1, runs=1, identical=1)


def _can_mount_tmpfs() -> bool:
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d && rmdir $d"],
                           capture_output=True)
    return probe.returncode == 0


TMPFS_SCRIPT = """
set -u
mkdir -p "$MOUNT"
mount -t tmpfs -o size=1m tmpfs "$MOUNT"
"$PYTHON" -m "$DRIVER" "$@" > "$LOG_DIR/stdout" 2> "$LOG_DIR/stderr" &
pid=$!
while [ ! -d "$RUN_DIR/checkpoints/gen-000008" ] && kill -0 $pid 2>/dev/null; do sleep 0.005; done
cat /dev/zero > "$MOUNT/ballast" 2>/dev/null
wait $pid
echo $? > "$LOG_DIR/code"
rm -f "$MOUNT/ballast"
cp -a "$MOUNT/." "$COPY_DIR/"
"""


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="cannot mount a tmpfs here (needs unshare --user --mount)")
@pytest.mark.parametrize("mounted", ["checkpoints", "run"])
def test_disk_full_on_a_real_tmpfs(faulty, clean, tmp_path, mounted, capsys):
    """A 1 MB tmpfs holds the checkpoints (or the whole run directory); a ballast file fills it
    once gen-000008 exists, so the kernel's ENOSPC hits the next checkpoint (or whichever file of
    the run is written next). The run stops with a clear error, gen-000008 stays intact, and once
    space is free again the run resumes bit-identically."""
    run_dir, copy, logs = tmp_path / "run", tmp_path / "copy", tmp_path / "logs"
    for folder in (run_dir, copy, logs):
        folder.mkdir()
    mount = run_dir / "checkpoints" if mounted == "checkpoints" else run_dir
    env = subprocess_env({"RUN_DIR": run_dir, "MOUNT": mount, "COPY_DIR": copy, "LOG_DIR": logs,
                          "PYTHON": sys.executable, "DRIVER": DRIVER, "FAULTY_DELAY": "0.02"})
    args = run_args(run_dir) + (["--overwrite"] if mounted == "checkpoints" else [])
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", TMPFS_SCRIPT, "sh", *args],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    code, err = int((logs / "code").read_text()), (logs / "stderr").read_text()
    assert code == 2, err
    assert "Traceback" not in err and err.startswith("blackbox run: error: could not write "), err
    assert "[Errno 28] No space left on device" in err, err
    if mounted == "checkpoints":
        assert err.startswith(f"blackbox run: error: could not write checkpoint gen-000012 in "
                              f"{run_dir / 'checkpoints'}: [Errno 28] No space left on device; the previous "
                              f"checkpoint gen-000008 is intact"), err
        shutil.rmtree(run_dir / "checkpoints")
        shutil.copytree(copy, run_dir / "checkpoints")
    else:
        run_dir = copy
    assert ck.latest_checkpoint(run_dir / "checkpoints").generation == 8 and leftovers(run_dir) == []
    assert len(read_csv_records(run_dir / "records.csv")) >= 8
    capsys.readouterr()
    assert main(["resume", str(run_dir), "--quiet"]) == 0  # space to spare now
    assert_same_run_dir(clean, run_dir)
    note(f"disk full (real tmpfs on the {mounted})", faults=1, runs=1, identical=1)
