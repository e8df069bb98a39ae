"""Nothing deleted that is not ours: ``--overwrite`` replaces only a blackbox run, and only what
blackbox wrote; a checkpoint of a newer format is neither corrupt nor set aside; no advice blackbox
prints destroys what it set aside; pruning and cleaning leave folders holding other files alone."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from pathlib import Path

import pytest

from blackbox.cli import main
from blackbox.store import checkpoint as ck
from tests.reliability.helpers import assert_same_run_dir, note

ARGS = ["--strategy", "openai-es:popsize=10,sigma=0.1", "--problem", "faulty:dim=4", "--seed", "3",
        "--checkpoint-every", "2", "--keep", "3", "--no-plot", "--quiet"]
COUNTS = {"tried": 0, "refused": 0}


def teardown_module(module):
    if not COUNTS["tried"]:
        return
    note("run directories that are not (only) a blackbox run, --overwrite", inputs=COUNTS["tried"],
         refused=COUNTS["refused"], uncaught=COUNTS["tried"] - COUNTS["refused"])


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry below ``folder``: a folder, or the sha256 of a file."""
    found = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        found[key] = "folder" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def run(out: Path, *extra: str, generations: int = 6) -> int:
    return main(["run", *ARGS, "--generations", str(generations), "--out", str(out), *extra])


@pytest.fixture
def a_run(faulty, tmp_path):
    out = tmp_path / "run"
    assert run(out) == 0
    return out


def lookalike(folder: Path) -> None:
    """A folder that is not a run but has entries named like a run's."""
    (folder / "checkpoints" / "gen-000002").mkdir(parents=True)
    (folder / "checkpoints" / "gen-000002" / "state.json").write_text("my notes")
    (folder / "tensorboard").mkdir()
    (folder / "records.csv").write_text("my,data\n1,2\n")
    (folder / "result.json").write_text("{}")
    (folder / "thesis.tex").write_text("\\documentclass{article}")


NOT_A_RUN = {
    "no-config": lambda folder: lookalike(folder),
    "foreign-config": lambda folder: (lookalike(folder), (folder / "config.toml").write_text('title = "mine"\n')),
    "hand-written-run-config": lambda folder: (lookalike(folder), (folder / "config.toml").write_text(
        '[strategy]\nname = "openai-es"\n[problem]\nname = "sphere"\n[stop]\ngenerations = 3\n')),
    "garbage-config": lambda folder: (lookalike(folder), (folder / "config.toml").write_bytes(b"\x00\xff" * 50)),
}


@pytest.mark.parametrize("how", list(NOT_A_RUN))
@pytest.mark.parametrize("flags", [[], ["--overwrite"]])
def test_a_folder_that_is_not_a_run_is_refused_whatever_the_flags(faulty, tmp_path, capsys, how, flags):
    folder = tmp_path / "mine"
    folder.mkdir()
    NOT_A_RUN[how](folder)
    before = snapshot(folder)
    COUNTS["tried"] += 1
    capsys.readouterr()
    assert run(folder, *flags) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"blackbox run: error: {folder} ") and err.count("\n") == 1, err
    assert "is not a blackbox run directory" in err and "choose another --out" in err
    assert snapshot(folder) == before  # nothing deleted, nothing written (no lock file either)
    COUNTS["refused"] += 1


FOREIGN = {
    "top": "notes.txt",
    "in-checkpoints": "checkpoints/mine.bin",
    "in-a-checkpoint": "checkpoints/gen-000006/mine.bin",
    "in-tensorboard": "tensorboard/mine.txt",
}


@pytest.mark.parametrize("where", list(FOREIGN))
def test_a_run_holding_files_blackbox_did_not_write_is_not_overwritten(a_run, capsys, where):
    extra = a_run / FOREIGN[where]
    extra.parent.mkdir(parents=True, exist_ok=True)
    extra.write_text("not blackbox's")
    before = snapshot(a_run)
    COUNTS["tried"] += 1
    capsys.readouterr()
    assert run(a_run, "--overwrite") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "files blackbox did not write" in err and FOREIGN[where] in err, err
    assert snapshot(a_run) == before
    COUNTS["refused"] += 1


def test_overwrite_replaces_a_run_and_keeps_the_checkpoints_set_aside(a_run, tmp_path, capsys):
    aside = a_run / "checkpoints" / "corrupt-gen-000004"
    (a_run / "checkpoints" / "gen-000004").rename(aside)
    kept = snapshot(aside)
    capsys.readouterr()
    assert run(a_run, "--overwrite", generations=8) == 0
    assert json.loads((a_run / "result.json").read_text())["notes"] == [
        "kept the checkpoints set aside by an earlier resume: checkpoints/corrupt-gen-000004"]
    assert snapshot(aside) == kept
    assert run(tmp_path / "clean", generations=8) == 0
    assert_same_run_dir(tmp_path / "clean", a_run)
    assert not (a_run / "blackbox.lock").exists()


def newer(path: Path, version: int = ck.FORMAT_VERSION + 1, writer: str = "9.9.0") -> None:
    """Make ``path`` a checkpoint as a newer blackbox would write it (its checksum agrees)."""
    meta = json.loads((path / "state.json").read_text())
    meta["format_version"], meta["code"]["blackbox"] = version, writer
    (path / "state.json").write_bytes(ck.seal_state_json(json.dumps(meta, indent=1)))


def test_resume_of_a_newer_format_says_upgrade_and_renames_nothing(a_run, capsys):
    newest = a_run / "checkpoints" / "gen-000006"
    newer(newest)
    before = snapshot(a_run)
    capsys.readouterr()
    assert main(["resume", str(a_run), "--generations", "8", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == (f"blackbox resume: error: cannot resume {a_run}: checkpoint {newest} has format version "
                   f"{ck.FORMAT_VERSION + 1}; this blackbox reads versions up to {ck.FORMAT_VERSION}: upgrade "
                   f"blackbox 9.9.0 (which wrote it) to resume this run\n")
    assert "--overwrite" not in err
    assert snapshot(a_run) == before  # not set aside, not skipped, no lock left
    with pytest.raises(bb_errors().CheckpointVersionError):
        ck.latest_checkpoint(a_run / "checkpoints", set_aside=True)
    assert snapshot(a_run) == before


def bb_errors():
    import blackbox.errors

    return blackbox.errors


def test_a_newer_version_number_that_fails_the_checksum_is_corruption(a_run, tmp_path, capsys):
    """A bit flip can turn format version 1 into 3: the checksum tells it from a newer format."""
    path = a_run / "checkpoints" / "gen-000006" / "state.json"
    data = path.read_bytes()
    at = data.index(b'"format_version": 1') + len(b'"format_version": ')
    path.write_bytes(data[:at] + b"3" + data[at + 1:])
    with pytest.raises(bb_errors().CheckpointError, match="has format version 3; this blackbox reads versions up "
                       "to 1, but its state_sha256 does not match its bytes: it is corrupt, not newer") as info:
        ck.load_checkpoint(path.parent)
    assert not isinstance(info.value, bb_errors().CheckpointVersionError)
    capsys.readouterr()
    assert main(["resume", str(a_run), "--generations", "8", "--quiet"]) == 0
    assert "the bad one is kept as corrupt-gen-000006" in capsys.readouterr().err
    assert run(tmp_path / "clean", generations=8) == 0
    assert_same_run_dir(tmp_path / "clean", a_run)


def test_the_advice_after_no_usable_checkpoint_keeps_what_was_set_aside(a_run, capsys):
    for _, path in ck.list_checkpoints(a_run / "checkpoints"):
        (path / "arrays.npz").write_bytes(b"garbage")
    capsys.readouterr()
    assert main(["resume", str(a_run), "--quiet"]) == 2
    err = capsys.readouterr().err
    aside = {p.name: snapshot(p) for p in (a_run / "checkpoints").iterdir()}
    assert sorted(aside) == ["corrupt-gen-000002", "corrupt-gen-000004", "corrupt-gen-000006"]
    advice = err.split("Start it again with `")[1].split("`")[0]
    assert advice == f"blackbox run --config {a_run / 'config.toml'} --out {a_run} --overwrite"
    assert main([*shlex.split(advice)[1:], "--quiet"]) == 0  # follow the advice
    assert {name: snapshot(a_run / "checkpoints" / name) for name in aside} == aside


def test_setting_aside_twice_deletes_nothing(tmp_path):
    from tests.store.test_checkpoint import make_run

    first = ck.save_checkpoint(tmp_path, make_run())
    (first / "arrays.npz").write_bytes(b"bad")
    assert ck.set_aside(first).name == "corrupt-gen-000007"
    again = ck.save_checkpoint(tmp_path, make_run())
    (again / "arrays.npz").write_bytes(b"worse")
    with pytest.raises(bb_errors().CheckpointError, match="no usable checkpoint"):
        ck.latest_checkpoint(tmp_path, set_aside=True)
    assert (tmp_path / "corrupt-gen-000007" / "arrays.npz").read_bytes() == b"bad"
    assert (tmp_path / "corrupt-gen-000007.2" / "arrays.npz").read_bytes() == b"worse"


def test_pruning_and_cleaning_leave_folders_with_other_files_alone(a_run):
    checkpoints = a_run / "checkpoints"
    (checkpoints / "gen-000002" / "README").write_text("mine")
    temporary = checkpoints / ".gen-000008.abc.tmp"
    temporary.mkdir()
    (temporary / "photo.jpg").write_text("mine too")
    ours = checkpoints / ".gen-000008.def.tmp"
    ours.mkdir()
    (ours / "arrays.npz").write_bytes(b"half")
    assert main(["resume", str(a_run), "--generations", "12", "--quiet"]) == 0
    assert (checkpoints / "gen-000002" / "README").exists() and (temporary / "photo.jpg").exists()
    assert not ours.exists()
    generations = [g for g, _ in ck.list_checkpoints(checkpoints)]
    assert generations[0] == 2 and generations[-3:] == [8, 10, 12] and len(generations) <= 5


def test_a_checkpoint_folder_holding_other_files_is_not_replaced(a_run, capsys):
    (a_run / "checkpoints" / "gen-000006" / "mine.txt").write_text("mine")
    capsys.readouterr()
    assert main(["resume", str(a_run), "--checkpoint", str(a_run / "checkpoints" / "gen-000004"), "--quiet"]) == 2
    assert "cannot write checkpoint gen-000006" in capsys.readouterr().err
    assert (a_run / "checkpoints" / "gen-000006" / "mine.txt").read_text() == "mine"


def test_shared_memory_folders_of_another_host_are_left_alone(tmp_path):
    """A pid names a process only on its own host: a run folder made on another host (a shared
    $BLACKBOX_SHM_DIR) is never taken for a dead run's leftovers."""
    import socket
    import subprocess
    import sys

    from blackbox.executors import shm

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    folders = {}
    for name, host in (("mine", socket.gethostname()), ("theirs", "node7.example"), ("older", None)):
        folders[name] = tmp_path / f"blackbox-run-{dead}-{name}"
        folders[name].mkdir()
        if host is not None:
            (folders[name] / ".host").write_text(host + "\n")
    shm.remove_stale(tmp_path)
    assert not folders["mine"].exists() and not folders["older"].exists()
    assert folders["theirs"].exists()
    made = shm.RunDirectory(tmp_path)
    assert (made.path / ".host").read_text() == socket.gethostname() + "\n"
    assert made.path.name.startswith(f"blackbox-run-{os.getpid()}-")
    made.cleanup()
    assert not made.path.exists()


def test_contrast_overwrite_replaces_only_its_own_outputs(tmp_path):
    from blackbox.cli.contrast import _out_dir
    from blackbox.errors import ConfigError

    (tmp_path / "contrast.json").write_text('{"my": "notes"}')
    (tmp_path / "contrast.png").write_bytes(b"\x89PNG\r\n\x1a\n my holiday photo")
    with pytest.raises(ConfigError, match="holds contrast.json, contrast.png, which blackbox contrast did not write"):
        _out_dir(tmp_path, "mnist", overwrite=True)
    (tmp_path / "contrast.json").write_text('{"comparison": {}, "slowdown": "..."}')
    (tmp_path / "contrast.png").write_bytes(b"\x89PNG\r\n\x1a\n...tEXtSoftware\x00Matplotlib version3.9")
    assert _out_dir(tmp_path, "mnist", overwrite=True) == tmp_path
