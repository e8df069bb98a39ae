"""One writer per run directory, with real processes: a second ``run``/``resume`` on a live run is
refused naming the holder; the lock outlives a SIGKILL and is then taken over (by one process only,
however many race for it); a lock written on another host is never taken over."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from blackbox.cli import main
from blackbox.errors import RunInUseError
from blackbox.store.lock import LOCK_FILE, RunLock, read_holder
from tests.reliability.helpers import assert_same_run_dir, driver, note, wait_for
from tests.reliability.test_run_directory import snapshot

GENERATIONS = 12
ROWS = 11  # a generation's rows: the population of 10 and the center


def run_args(out: Path, generations: int = GENERATIONS) -> list[str]:
    return ["run", "--strategy", "openai-es:popsize=10,sigma=0.1", "--problem", "faulty:dim=4", "--seed", "7",
            "--generations", str(generations), "--checkpoint-every", "2", "--keep", "2", "--no-plot", "--quiet",
            "--out", str(out)]


@pytest.fixture(scope="module")
def clean(faulty, tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "run"
    assert main(run_args(out)) == 0
    return out


def refusal(err: str, out: Path, pid: int) -> None:
    """The one line that names the holder: pid, host, since when, and its command."""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    pattern = (rf"error: {re.escape(str(out))} is in use by pid {pid} on host {re.escape(socket.gethostname())}, "
               r"since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} \(`blackbox run --strategy ")
    assert re.search(pattern, err), err
    assert "wait for that run to end (or stop it)" in err


def test_a_second_writer_on_a_live_run_is_refused_and_a_killed_run_resumes(faulty, clean, tmp_path):
    out, mark = tmp_path / "run", tmp_path / "hanging"
    # From generation 3 on, the first evaluation with a hanging seed hangs (after writing ``mark``):
    # the run stays live, however long the second writers take to start on a loaded machine.
    live = driver(run_args(out), env={"FAULTY_MODE": "hang", "FAULTY_FROM": str(ROWS * 2), "FAULTY_MARK": str(mark)},
                  wait=False)
    try:
        wait_for(mark, live, seconds=300)
        holder = read_holder(out)
        assert holder is not None and holder.pid == live.pid and holder.host == socket.gethostname()
        config = (out / "config.toml").read_bytes()
        for args in (["resume", str(out), "--quiet"], run_args(out) + ["--overwrite"],
                     ["resume", str(out), "--generations", "30", "--quiet"]):
            assert live.poll() is None, "the live run ended before the test could try a second writer"
            done = driver(args, timeout=120)
            assert done.returncode == 2, done.stderr
            refusal(done.stderr, out, live.pid)
            assert (out / "config.toml").read_bytes() == config and (out / "checkpoints").is_dir()
        assert live.poll() is None  # the live run never noticed
        live.send_signal(signal.SIGKILL)
        live.wait(timeout=30)
    finally:
        if live.poll() is None:
            live.kill()
    assert read_holder(out).pid == live.pid  # the lock file outlives the crash, naming the dead holder
    done = driver(["resume", str(out), "--json"], timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["notes"][0].startswith(f"took over the lock left by pid {live.pid} on host ")
    assert not (out / LOCK_FILE).exists()
    assert_same_run_dir(clean, out)
    note("a second writer on a live run (resume, run --overwrite), then SIGKILL and resume",
         faults=4, runs=1, identical=1)


def test_processes_racing_for_a_stale_lock_take_it_one_at_a_time(faulty, clean, tmp_path):
    out, mark = tmp_path / "run", tmp_path / "hanging"
    first = driver(run_args(out), env={"FAULTY_MODE": "hang", "FAULTY_FROM": str(ROWS * 4), "FAULTY_MARK": str(mark)},
                   wait=False)  # held from generation 5 on: killed mid-run, never after its end
    try:
        wait_for(mark, first, seconds=300)
    finally:
        first.kill()
        first.wait(timeout=30)
    racers = [driver(["resume", str(out), "--quiet"], env={"FAULTY_DELAY": "0.2"}, wait=False) for _ in range(4)]
    outcomes = []
    for racer in racers:
        _, err = racer.communicate(timeout=300)
        outcomes.append((racer.returncode, err))
    codes = sorted(code for code, _ in outcomes)
    assert codes.count(0) >= 1 and set(codes) <= {0, 2}, outcomes
    for code, err in outcomes:
        if code == 2:  # refused while another resume held the lock, never a second writer
            assert "is in use by pid" in err and f"pid {first.pid} " not in err, err
    assert not (out / LOCK_FILE).exists()
    assert_same_run_dir(clean, out)
    note("processes racing for a stale lock", faults=len(racers), runs=1, identical=1)


def test_a_lock_written_on_another_host_is_never_taken_over(faulty, a_stopped_run):
    out = a_stopped_run
    stale = {"pid": 1, "host": "elsewhere.example", "since": "2026-01-01T00:00:00+0000", "command": "blackbox run"}
    (out / LOCK_FILE).write_text(json.dumps(stale))
    before = snapshot(out)
    done = driver(["resume", str(out), "--quiet"], timeout=120)
    assert done.returncode == 2
    assert (f"{out} is in use by pid 1 on host elsewhere.example, since 2026-01-01T00:00:00+0000 (`blackbox run`): "
            f"its lock file {out / LOCK_FILE} was written on another host") in done.stderr
    assert snapshot(out) == before


@pytest.fixture
def a_stopped_run(faulty, tmp_path):
    out = tmp_path / "run"
    assert main(run_args(out, generations=4)) == 0
    return out


def test_a_lock_is_released_and_garbled_or_dead_locks_are_taken_over(tmp_path):
    with RunLock(tmp_path) as lock:
        assert read_holder(tmp_path).pid == os.getpid()
        with pytest.raises(RunInUseError, match=f"in use by pid {os.getpid()} on host"):
            RunLock(tmp_path).acquire()  # even from the same process
        assert lock.held
    assert not (tmp_path / LOCK_FILE).exists()
    (tmp_path / LOCK_FILE).write_bytes(b"\x00garbled")  # a crash while the lock file was written
    with RunLock(tmp_path) as lock:
        assert lock.taken_over is None and read_holder(tmp_path).pid == os.getpid()
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": 1, "host": socket.gethostname()}))  # a reused pid
    with RunLock(tmp_path) as lock:  # alive, but not holding the lock: every holder keeps its flock
        assert lock.taken_over is not None and lock.taken_over.pid == 1
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    with RunLock(tmp_path) as lock:
        assert lock.taken_over is not None and lock.taken_over.pid == int(dead.stdout)


def test_a_forked_child_does_not_keep_the_lock(tmp_path):
    """A child made by fork() (a problem's own worker processes) would share the lock and keep the
    directory locked after its parent died; it closes its copy at once."""
    lock = RunLock(tmp_path).acquire()
    ready, told = os.pipe()
    release, hold = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(told, b"x")  # running: past fork(), and so past what runs at fork
        os.close(hold)
        os.read(release, 1)  # alive until the parent is done (end of file when it closes ``hold``)
        os._exit(0)
    try:
        assert os.read(ready, 1) == b"x"
        os.close(lock._fd)  # the parent "dies": its descriptor is gone, the lock file stays
        lock._fd = None
        with RunLock(tmp_path):
            pass
    finally:
        os.close(hold)
        os.waitpid(child, 0)


@pytest.mark.parametrize("kind", ["link", "folder"])
def test_a_lock_file_that_is_a_link_or_a_folder_is_refused_and_left_alone(tmp_path, kind):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    if kind == "link":
        (run_dir / LOCK_FILE).symlink_to(target)
    else:
        (run_dir / LOCK_FILE).mkdir()
    with pytest.raises(RunInUseError, match=f"{LOCK_FILE} is a link or a folder, which blackbox does not make"):
        RunLock(run_dir).acquire()
    assert target.read_text() == "keep me" and os.path.lexists(run_dir / LOCK_FILE)
