"""Faults in a run made by ``blackbox run`` and continued by ``blackbox resume``: an evaluation that
raises, returns NaN or inf, or hangs past the executor's timeout; Ctrl-C. Each is handled as
documented, the last checkpoint stays intact, and resuming finishes bit-identically to a run that
never met the fault."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import time
from pathlib import Path

import numpy as np
import pytest

import blackbox as bb
from blackbox.cli import main
from blackbox.core.seeding import evaluation_seeds
from blackbox.driver.logs import read_csv_records
from blackbox.store.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint
from tests.reliability.helpers import (
    assert_same_run_dir,
    descendants,
    driver,
    note,
    wait_for,
    wait_gone,
)

SEED, POPSIZE, GENERATIONS, EVERY = 5, 10, 20, 4
ROWS = POPSIZE + 1  # the population and the center


def run_args(out, executor="serial", generations=GENERATIONS, every=EVERY):
    return ["run", "--strategy", f"openai-es:popsize={POPSIZE},sigma=0.1", "--problem", "faulty:dim=4",
            "--seed", str(SEED), "--generations", str(generations), "--checkpoint-every", str(every),
            "--keep", "2", "--no-plot", "--quiet", "--executor", executor, "--out", str(out)]


@pytest.fixture(scope="module")
def clean(faulty, tmp_path_factory):
    """A run that meets no fault: what every resumed run must equal."""
    out = tmp_path_factory.mktemp("clean") / "run"
    assert main(run_args(out)) == 0
    return out


def seeds_of_generation(generation: int) -> np.ndarray:
    """The evaluation seed of each row of generation ``generation`` (1-based), center included."""
    strategy = bb.make_strategy("openai-es", dim=4, popsize=POPSIZE, sigma=0.1, seed=SEED)
    groups = strategy.ask().with_center(strategy.center).groups
    return evaluation_seeds(SEED, generation - 1, groups)


def fault_window(first: int, last: int | None = None) -> dict[str, str]:
    """Environment variables that make generations ``first``..``last`` (1-based) meet the fault."""
    env = {"FAULTY_FROM": str(ROWS * (first - 1))}
    if last is not None:
        env["FAULTY_UNTIL"] = str(ROWS * last)
    return env


def assert_checkpoint_intact(out: Path, generation: int) -> None:
    latest = latest_checkpoint(out / "checkpoints")
    assert latest.generation == generation
    assert [g for g, _ in list_checkpoints(out / "checkpoints")][-1] == generation
    assert np.all(np.isfinite(latest.center))
    assert not [p for p in (out / "checkpoints").iterdir() if p.name.startswith(".")]


def resume_and_compare(out: Path, clean: Path, resumed_from: int, capsys=None) -> dict:
    if capsys is not None:
        capsys.readouterr()
    assert main(["resume", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out) if capsys is not None else None
    if summary is not None:
        assert summary["resumed_from"] == resumed_from and summary["finished"]
        assert "warnings" not in summary
    assert_same_run_dir(clean, out)
    return summary


# -- an evaluation that raises ------------------------------------------------------------------
def check_evaluation_error(stderr: str, generation: int) -> None:
    match = re.search(r"blackbox run: error: evaluation of row (\d+) \(seed (\d+)\) failed: ValueError: "
                      r"simulated failure after (\d+) observed rows", stderr)
    assert match, stderr
    row, seed, count = map(int, match.groups())
    assert seeds_of_generation(generation)[row] == seed  # the named seed is that row's
    assert count == ROWS * (generation - 1)


def test_an_evaluation_that_raises_stops_the_run_and_it_resumes(faulty, clean, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    for key, value in {"FAULTY_MODE": "raise", **fault_window(10)}.items():
        monkeypatch.setenv(key, value)
    assert main(run_args(out)) == 2
    check_evaluation_error(capsys.readouterr().err, 10)
    result = json.loads((out / "result.json").read_text())
    assert not result["finished"] and result["stop_reason"].startswith("error: EvaluationError: evaluation of row")
    assert len(read_csv_records(out / "records.csv")) == 9
    assert_checkpoint_intact(out, 8)
    monkeypatch.delenv("FAULTY_MODE")  # the bug is fixed
    resume_and_compare(out, clean, 8, capsys)
    note("evaluation raises (serial)", faults=1, runs=1, identical=1)


def test_an_evaluation_that_raises_in_a_loky_worker(faulty, clean, tmp_path):
    out = tmp_path / "run"
    done = driver(run_args(out, "loky:workers=2"), env={"FAULTY_MODE": "raise", **fault_window(7)})
    assert done.returncode == 2, done.stderr
    check_evaluation_error(done.stderr, 7)
    assert "Traceback" not in done.stderr
    assert_checkpoint_intact(out, 4)
    done = driver(["resume", str(out), "--quiet"])
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    assert_same_run_dir(clean, out)
    note("evaluation raises (loky)", faults=1, runs=1, identical=1)


# -- NaN and inf --------------------------------------------------------------------------------
def test_nan_and_inf_fitness_rank_as_documented_and_the_run_resumes(faulty, tmp_path, monkeypatch, capsys):
    """Rows score NaN, +inf or -inf (by seed) in generations 5..9: NaN and -inf rank worst, +inf
    best; the run goes on with a finite center; a checkpoint holding the non-finite records resumes
    bit-identically."""
    for key, value in {"FAULTY_MODE": "nonfinite", **fault_window(5, 9)}.items():
        monkeypatch.setenv(key, value)
    full, cut = tmp_path / "full", tmp_path / "cut"
    assert main(run_args(full)) == 0
    records = read_csv_records(full / "records.csv")
    kinds = {g: seeds_of_generation(g)[:POPSIZE] % 4 for g in range(5, 10)}
    for g, kind in kinds.items():
        record = records[g - 1]
        assert record["best"] == (np.inf if np.any(kind == 1) else record["best"])
        assert record["worst"] == (-np.inf if np.any(kind == 2) else record["worst"])
        assert np.isfinite(record["mean"]) == (not np.any((kind == 1) | (kind == 2)))
        assert np.isfinite(record["median"]) or np.any((kind == 1) | (kind == 2))
    assert all(np.isfinite(r["sigma"]) and np.isfinite(r["update_norm"]) for r in records)
    solution = np.load(full / "solution.npz")
    assert np.all(np.isfinite(solution["center"]))
    # Cut at generation 8 (inside the window), then resumed: identical to the uninterrupted run.
    assert main(run_args(cut, generations=8)) == 0
    checkpoint = load_checkpoint(cut / "checkpoints" / "gen-000008")
    assert any(np.isinf(r.best) for r in checkpoint.records)
    capsys.readouterr()
    assert main(["resume", str(cut), "--generations", str(GENERATIONS), "--quiet"]) == 0
    assert_same_run_dir(full, cut)
    note("NaN/inf fitness", faults=int(sum(np.sum(k != 3) for k in kinds.values())), runs=1, identical=1)


@pytest.mark.parametrize("name", ["openai-es", "nes", "ga", "pgpe", "snes", "xnes", "cma-es", "sep-cma-es",
                                  "ars", "cem"])
def test_nan_ranks_worst_in_every_builtin_strategy(name):
    """A NaN row is treated exactly like the worst possible fitness: telling -inf instead of NaN
    leaves the same state (and +inf is the best: the center never becomes NaN)."""
    fitness = np.array([0.3, np.nan, -1.0, 2.0, np.inf, -np.inf, 1.0, np.nan, 0.5, -0.2, 0.0, 0.7])
    states = []
    for f in (fitness, np.where(np.isnan(fitness), -np.inf, fitness)):
        strategy = bb.make_strategy(name, dim=3, popsize=12, seed=1)
        for _ in range(3):
            strategy.ask()
            strategy.tell(f)
        assert np.all(np.isfinite(strategy.center))
        states.append(strategy.state_dict())
    a, b = states
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            assert np.array_equal(a[key], b[key], equal_nan=True), key


# -- an evaluation that hangs -------------------------------------------------------------------
def hang_generation() -> int:
    """The first generation from 6 on whose rows include a seed that hangs (seed % 5 == 0)."""
    return next(g for g in range(6, GENERATIONS) if np.any(seeds_of_generation(g) % 5 == 0))


def test_a_hung_evaluation_times_out_with_an_error_and_the_run_resumes(faulty, clean, tmp_path):
    out, g = tmp_path / "run", hang_generation()
    started = time.monotonic()
    done = driver(run_args(out, "loky:workers=2,timeout=1,on_timeout=error"),
                  env={"FAULTY_MODE": "hang", **fault_window(g, g)})
    assert done.returncode == 2, done.stderr
    match = re.search(r"blackbox run: error: evaluation of row (\d+) \(seed (\d+)\) did not finish within the "
                      r"timeout of 1 s; its worker was killed and replaced", done.stderr)
    assert match, done.stderr
    row, seed = map(int, match.groups())
    assert seeds_of_generation(g)[row] == seed and seed % 5 == 0
    assert time.monotonic() - started < 60
    assert_checkpoint_intact(out, (g - 1) // EVERY * EVERY)
    done = driver(["resume", str(out), "--quiet"])
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    assert_same_run_dir(clean, out)
    note("evaluation hangs, on_timeout=error", faults=1, runs=1, identical=1)


def test_a_hung_evaluation_scores_worst_and_the_run_goes_on(faulty, clean, tmp_path):
    out, g = tmp_path / "run", hang_generation()
    done = driver(run_args(out, "loky:workers=2,timeout=1,on_timeout=worst"),
                  env={"FAULTY_MODE": "hang", **fault_window(g, g)})
    assert done.returncode == 0, done.stderr
    records, reference = read_csv_records(out / "records.csv"), read_csv_records(clean / "records.csv")
    assert len(records) == GENERATIONS
    hung = seeds_of_generation(g)[:POPSIZE] % 5 == 0
    assert records[g - 1]["worst"] == (-np.inf if hung.any() else reference[g - 1]["worst"])
    assert [r["best"] for r in records[: g - 1]] == [r["best"] for r in reference[: g - 1]]
    center_hung = seeds_of_generation(g)[POPSIZE] % 5 == 0
    assert (records[g - 1]["center"] == -np.inf) == center_hung
    assert np.all(np.isfinite(np.load(out / "solution.npz")["center"]))
    assert load_checkpoint(out / "checkpoints" / f"gen-{GENERATIONS:06d}").generation == GENERATIONS
    note("evaluation hangs, on_timeout=worst", faults=1, runs=1, identical=0)


# -- Ctrl-C -------------------------------------------------------------------------------------
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to list processes")
@pytest.mark.parametrize("group", [False, True], ids=["driver", "process-group"])
def test_ctrl_c_of_a_loky_run_exits_130_without_orphans_and_resumes_bit_identically(
        faulty, clean, tmp_path, group, capsys):
    out, mark = tmp_path / "run", tmp_path / "hanging"
    g = next(g for g in range(10, GENERATIONS) if np.any(seeds_of_generation(g) % 5 == 0))
    # Generation g hangs in a worker (after writing ``mark``): the run is surely inside it when the
    # signal lands, and cannot finish first however loaded the machine is.
    process = driver(run_args(out, "loky:workers=2", generations=40),
                     env={"FAULTY_MODE": "hang", "FAULTY_MARK": str(mark), **fault_window(g, g)},
                     wait=False, new_session=group)
    try:
        wait_for(mark, process, seconds=300)
        started = descendants(process.pid)
        if group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert f"blackbox run: interrupted; continue it with `blackbox resume {shlex.quote(str(out))}`\n" in stderr
    assert "Traceback" not in stderr
    assert len(started) >= 2 and wait_gone(started, 60) == []
    assert not list(Path("/dev/shm").glob(f"blackbox-run-{process.pid}-*"))
    result = json.loads((out / "result.json").read_text())
    assert result["stop_reason"] == "interrupted" and not result["finished"]
    latest = latest_checkpoint(out / "checkpoints")
    assert latest.generation >= 8 and not [p for p in (out / "checkpoints").iterdir() if p.name.startswith(".")]
    resume_and_compare_full(out, clean, latest.generation, capsys)
    note("Ctrl-C of a loky run", faults=1, runs=1, identical=1, orphans=0)


def resume_and_compare_full(out, clean, generation, capsys):
    """Resume an interrupted 40-generation run with a budget of 20: the same as the clean run."""
    capsys.readouterr()
    done = main(["resume", str(out), "--generations", str(GENERATIONS), "--json"])
    assert done == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["resumed_from"] == generation < GENERATIONS
    assert_same_run_dir(clean, out)

