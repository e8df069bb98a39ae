"""The pipelined mode: generation g+1 is sampled (ask_ahead) before g is told. Deterministic (the
same bits with any executor), resumable from a checkpoint bit for bit, and a different algorithm
than the synchronous loop (the update is one generation old)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import blackbox as bb
from tests.helpers import subprocess_env
from tests.helpers.executor_problems import Stateful


def run(executor, name="openai-es", pipelined=True, generations=6, problem="rosenbrock:dim=8"):
    strategy = bb.make_strategy(name, dim=8, popsize=20, seed=3)
    return bb.optimize(strategy, problem, executor, generations=generations, seed=1, pipelined=pipelined)


def records(result):
    return [{k: v for k, v in r.as_dict().items() if k not in ("time", "generation_time")} for r in result.records]


@pytest.mark.parametrize("name", ["openai-es", "pgpe", "sep-cma-es", "ga"])
def test_the_same_bits_with_any_executor(name):
    # Stateful folds every row's info into its state: generation g+1 evaluates under the state of
    # its sampling, while the driver's state keeps every observation (the serial executor, which
    # installs the older state in the driver's own problem, must not lose any)
    serial = run("serial", name, problem=Stateful(8))
    for executor in ("loky:workers=2", "futures:kind=thread,workers=3"):
        other = run(executor, name, problem=Stateful(8))
        assert records(other) == records(serial) and np.array_equal(other.center, serial.center)


def test_a_different_algorithm_than_the_synchronous_loop_that_still_learns():
    sync, piped = run("serial", pipelined=False, generations=30), run("serial", generations=30)
    assert not np.array_equal(sync.center, piped.center)
    assert records(sync)[0] == records(piped)[0]  # generation 1 has no update to be late for
    assert piped.records[-1].center > piped.records[0].center + 0.2  # -7.0 to -6.67 (synchronous: -6.49)


def test_ask_ahead_needs_one_pending_population():
    es = bb.make_strategy("openai-es", dim=3, popsize=4, seed=0)
    with pytest.raises(bb.StateError, match=r"^ask_ahead\(\) needs a pending population; call ask\(\) first"):
        es.ask_ahead()
    es.ask()
    es.ask_ahead()
    with pytest.raises(bb.StateError, match=r"^ask_ahead\(\) called twice without tell\(\)"):
        es.ask_ahead()


def test_a_strategy_that_keeps_its_last_draw_is_refused():
    """CMA-ES and xNES tell with the normals their last ask drew: asked ahead, they would use g+1's."""
    with pytest.raises(bb.ConfigError) as info:
        run("serial", "cma-es")
    assert str(info.value) == (
        "the pipelined mode needs a strategy that can sample its next population before this one is told; "
        "cma-es keeps what its last ask() drew for its tell() (the table strategies can: openai-es, nes, pgpe, "
        "snes, sep-cma-es, ars, cem, ga); run it without pipelined"
    )
    es = bb.make_strategy("xnes", dim=3, popsize=6, seed=0)
    es.ask()
    with pytest.raises(bb.StateError, match=r"^xnes cannot sample ahead: its tell\(\) uses what its last ask\(\) kept"):
        es.ask_ahead()


@pytest.mark.parametrize("name", ["pgpe", "ga"])
def test_a_population_asked_ahead_is_kept_in_the_state(name):
    def f(x):
        return -np.sum((x - 1) ** 2, axis=1)

    es = bb.make_strategy(name, dim=4, popsize=10, seed=2)
    first = es.ask()
    ahead = es.ask_ahead()
    es.tell(f(first.params))
    state = es.state_dict()
    assert "asked_ahead" in state  # sampled before the update: it cannot be asked again from the state
    other = bb.make_strategy(name, dim=4, popsize=10, seed=99)
    other.load_state_dict(state)
    assert np.array_equal(other.pending_population.params, ahead.params)
    for strategy in (es, other):
        strategy.ask_ahead()
        strategy.tell(f(strategy.pending_population.params))
    assert es.center.tobytes() == other.center.tobytes()
    assert np.array_equal(es.pending_population.params, other.pending_population.params)


def test_a_run_resumed_from_a_checkpoint_continues_bit_for_bit(tmp_path):
    base = [sys.executable, "-m", "blackbox"]
    args = ["run", "--problem", "rosenbrock:dim=8", "--strategy", "pgpe", "--generations", "6", "--pipelined",
            "--quiet", "--no-plot", "--checkpoint-every", "1", "--keep", "10"]
    env = subprocess_env()
    subprocess.run([*base, *args, "--out", str(tmp_path / "full")], check=True, env=env)
    resumed = tmp_path / "resumed"
    (resumed / "checkpoints").mkdir(parents=True)
    shutil.copy(tmp_path / "full" / "config.toml", resumed / "config.toml")
    shutil.copytree(tmp_path / "full" / "checkpoints" / "gen-000003", resumed / "checkpoints" / "gen-000003")
    subprocess.run([*base, "resume", str(resumed), "--quiet", "--no-plot"], check=True, env=env)

    def lines(run):
        return [{k: v for k, v in json.loads(line).items() if k not in ("time", "generation_time")}
                for line in (run / "records.jsonl").read_text().splitlines() if line]

    assert lines(resumed) == lines(tmp_path / "full") and len(lines(resumed)) == 6
    with np.load(tmp_path / "full" / "solution.npz") as a, np.load(resumed / "solution.npz") as b:
        assert all(np.array_equal(a[k], b[k]) for k in a.files)
    assert "pipelined = true" in (resumed / "config.toml").read_text()
