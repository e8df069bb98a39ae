"""benchmarks/rl_presets.py --runs: a trial's run directory is kept; an interrupted trial continues from its
newest checkpoint to the same result as an uninterrupted one, a finished one is read back, another run is redone."""

from __future__ import annotations

import pytest

from tests.helpers import benchmark_module

pytest.importorskip("gymnasium")

FLAGS = ["--generations", "6", "--checkpoint-every", "2"]
OUTCOME = ("solved", "steps", "generations", "best_center", "last_center", "curve", "stop_reason")


def _interrupt_at(generation: int):
    from blackbox.driver.loop import Callback

    class Interrupt(Callback):
        def on_generation(self, run, record):
            if record.generation == generation:
                raise KeyboardInterrupt

    return Interrupt()


def test_an_interrupted_trial_resumes_to_the_uninterrupted_result_and_a_finished_one_is_read_back(
        tmp_path, monkeypatch):
    presets = benchmark_module("rl_presets")
    whole = presets.run_trial("CartPole-v1", FLAGS, 3, tmp_path / "whole")
    assert whole["generations"] > 3 and "kept" not in whole  # past the interruption below

    out = presets.trial_dir(tmp_path / "kept", "CartPole-v1", "preset", 3)
    assert out == tmp_path / "kept" / "CartPole-v1-3"
    with monkeypatch.context() as patch:
        patch.setattr(presets, "_progress", lambda every: _interrupt_at(3))
        with pytest.raises(KeyboardInterrupt):
            presets.run_trial("CartPole-v1", FLAGS, 3, out, keep=True)
    assert (out / "checkpoints").is_dir()

    resumed = presets.run_trial("CartPole-v1", FLAGS, 3, out, keep=True)
    assert resumed["kept"] == "checkpoint"
    assert {k: resumed[k] for k in OUTCOME} == {k: whole[k] for k in OUTCOME}

    again = presets.run_trial("CartPole-v1", FLAGS, 3, out, keep=True)
    assert again["kept"] == "finished" and again["load"] is None  # read back: the load it ran under is unknown
    assert {k: again[k] for k in OUTCOME} == {k: whole[k] for k in OUTCOME}


def test_a_kept_directory_of_another_run_is_started_over(tmp_path):
    presets = benchmark_module("rl_presets")
    out = tmp_path / "CartPole-v1-3"
    presets.run_trial("CartPole-v1", ["--generations", "2"], 4, out)  # seed 4 in seed 3's place
    other = presets.run_trial("CartPole-v1", ["--generations", "2"], 3, out, keep=True)
    assert "kept" not in other and other["seed"] == 3
    assert presets.run_trial("CartPole-v1", ["--generations", "2"], 3, out, keep=True)["kept"] == "finished"


def test_measure_keeps_each_trial_under_its_task_label_and_seed(tmp_path):
    presets = benchmark_module("rl_presets")
    rows, trials = presets.measure(["CartPole-v1"], [5], extra="--generations 1", notes=False, log=lambda _: None,
                                   runs=tmp_path)
    assert [t["seed"] for t in trials] == [5]
    assert (tmp_path / "CartPole-v1---generations_1-5" / "result.json").is_file()
