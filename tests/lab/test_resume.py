"""``blackbox resume``: an interrupted run continues bit-identically to one never interrupted."""

import json
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from blackbox.cli import main
from blackbox.config.run import run_config
from blackbox.driver.logs import read_csv_records, read_jsonl_records
from blackbox.driver.loop import Callback
from blackbox.files import load_npz
from blackbox.lab.runs import resume_run, start_run
from blackbox.store.checkpoint import list_checkpoints, seal_state_json
from tests.helpers import subprocess_env
from tests.helpers.extras import import_or_skip
from tests.helpers.run_problems import registered_drift

TIMINGS = ("time", "generation_time")


@pytest.fixture
def drift():
    with registered_drift():
        yield


def records_without_timings(run_dir):
    rows = read_csv_records(Path(run_dir) / "records.csv")
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in rows]


def assert_same_run(a, b):
    a, b = Path(a), Path(b)
    assert records_without_timings(a) == records_without_timings(b)
    jsonl_a = [{k: v for k, v in r.items() if k not in TIMINGS} for r in read_jsonl_records(a / "records.jsonl")]
    jsonl_b = [{k: v for k, v in r.items() if k not in TIMINGS} for r in read_jsonl_records(b / "records.jsonl")]
    assert jsonl_a == jsonl_b
    sa, sb = load_npz(a / "solution.npz"), load_npz(b / "solution.npz")
    assert sa["center"].tobytes() == sb["center"].tobytes()  # bit-identical
    assert sa["best_params"].tobytes() == sb["best_params"].tobytes()


def config(strategy="openai-es:popsize=10,sigma=0.1", generations=30, every=5, **stop):
    return run_config(strategy, "drift:dim=4", seed=11, stop={"generations": generations, **stop},
                      checkpoint={"every": every, "keep": 2}, log={"plot": False})


class StopAt(Callback):
    def __init__(self, generation):
        self.generation = generation

    def on_generation(self, run, record):
        return record.generation == self.generation


@pytest.mark.parametrize("strategy", ["openai-es:popsize=10,sigma=0.1", "nes:popsize=10,mirrored=true", "ga:popsize=10"])
def test_stopped_by_a_callback_then_resumed(tmp_path, drift, strategy):
    full = start_run(config(strategy, goal=-0.05, goal_generations=2), tmp_path / "full")
    summary = start_run(config(strategy, goal=-0.05, goal_generations=2), tmp_path / "cut", callbacks=[StopAt(13)])
    assert summary["generations"] == 13 and not summary["finished"]
    assert [g for g, _ in list_checkpoints(tmp_path / "cut" / "checkpoints")][-1] == 13
    resumed = resume_run(tmp_path / "cut")
    assert resumed["resumed_from"] == 13 and resumed["finished"]
    assert resumed["generations"] == full["generations"] and resumed["stop_reason"] == full["stop_reason"]
    assert_same_run(tmp_path / "full", tmp_path / "cut")


def test_records_past_the_checkpoint_are_cut_back(tmp_path, drift):
    start_run(config(), tmp_path / "full")
    start_run(config(), tmp_path / "cut", callbacks=[StopAt(13)])
    shutil.rmtree(tmp_path / "cut" / "checkpoints" / "gen-000013")  # as if killed after generation 13's row
    assert len(read_csv_records(tmp_path / "cut" / "records.csv")) == 13
    summary = resume_run(tmp_path / "cut")
    assert summary["resumed_from"] == 10
    assert_same_run(tmp_path / "full", tmp_path / "cut")


def test_goal_streak_survives_the_checkpoint(tmp_path, drift):
    """The goal held at generations 9 and 10; the checkpoint at 10 must carry the streak of 2."""
    full = start_run(config(generations=60, goal=-0.3, goal_generations=4), tmp_path / "full")
    records = read_csv_records(tmp_path / "full" / "records.csv")
    held = [r["generation"] for r in records if r["center"] >= -0.3]
    assert full["stop_reason"] == "center fitness >= -0.3 for 4 generations"
    stop = full["generations"]
    assert held[-4:] == list(range(stop - 3, stop + 1))
    cut_at = stop - 2  # the streak is 2 when the run is cut
    start_run(config(generations=60, goal=-0.3, goal_generations=4, every=cut_at), tmp_path / "cut",
              callbacks=[StopAt(cut_at)])
    resume_run(tmp_path / "cut")
    assert_same_run(tmp_path / "full", tmp_path / "cut")


KILLED_RUN = """\
import sys
from tests.helpers.run_problems import register_drift
from blackbox.cli import main
register_drift()
sys.exit(main(sys.argv[1:]))
"""


def run_script(tmp_path, args, env=None, wait=True):
    script = tmp_path / "driver.py"
    script.write_text(KILLED_RUN)
    full_env = subprocess_env(env)
    command = [sys.executable, str(script), *args]
    if wait:
        return subprocess.run(command, capture_output=True, text=True, env=full_env, timeout=600)
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)


def test_killed_in_a_subprocess_then_resumed(tmp_path, drift):
    args = ["run", "--strategy", "openai-es:popsize=10,sigma=0.1", "--problem", "drift:dim=4", "--seed", "5",
            "--generations", "40", "--checkpoint-every", "4", "--keep", "2", "--no-plot", "--quiet"]
    assert main(args + ["--out", str(tmp_path / "full")]) == 0
    cut = tmp_path / "cut"
    held = tmp_path / "held"
    # Held (an hour's sleep, after writing ``held``) once generation 10 starts: killed mid-run, never after its end.
    process = run_script(tmp_path, args + ["--out", str(cut)], env={"DRIFT_HANG": f"{9 * 11}:{held}"}, wait=False)
    try:
        deadline = time.monotonic() + 300
        while not held.exists():
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the run never reached generation 10"
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=300)
    assert process.returncode == -signal.SIGKILL
    written = len(read_csv_records(cut / "records.csv"))
    assert 8 <= written < 40 and not (cut / "result.json").exists()
    done = run_script(tmp_path, ["resume", str(cut), "--json"])
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["resumed_from"] % 4 == 0 and 8 <= summary["resumed_from"] <= written
    assert summary["generations"] == 40 and summary["finished"]
    assert "warning" not in done.stderr
    assert_same_run(tmp_path / "full", cut)


def test_resume_warns_about_changes_that_break_exactness(tmp_path, drift, capsys):
    run_dir = tmp_path / "run"
    start_run(config(generations=6), run_dir, callbacks=[StopAt(5)])
    text = (run_dir / "config.toml").read_text()
    (run_dir / "config.toml").write_text(text.replace("lr = 0.01", "lr = 0.02").replace(
        'name = "serial"', 'name = "serial"\nbatch_size = 3'))
    state = run_dir / "checkpoints" / "gen-000005" / "state.json"
    meta = json.loads(state.read_text())
    meta["code"]["numpy"] = "1.0.0"
    state.write_bytes(seal_state_json(json.dumps(meta)))  # as that numpy would have written it
    assert main(["resume", str(run_dir), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert ("blackbox resume: warning: the config of " in err
            and "changed since checkpoint gen-000005 in ways that make the continued run differ from an "
                "uninterrupted one: strategy.lr: 0.01 -> 0.02" in err)
    assert "executor" not in err  # executors give identical results: not a break
    assert f"numpy version: 1.0.0 -> {np.__version__}" in err
    assert json.loads((run_dir / "result.json").read_text())["warnings"]


def test_resume_falls_back_past_a_corrupt_checkpoint(tmp_path, drift, capsys):
    start_run(config(), tmp_path / "full")
    start_run(config(), tmp_path / "cut", callbacks=[StopAt(12)])
    npz = tmp_path / "cut" / "checkpoints" / "gen-000012" / "arrays.npz"
    npz.write_bytes(npz.read_bytes()[:50])
    assert main(["resume", str(tmp_path / "cut"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "gen-000012: arrays.npz is truncated or corrupt" in err and "using the previous checkpoint" in err
    assert_same_run(tmp_path / "full", tmp_path / "cut")


def test_resume_a_finished_run_and_extend_it(tmp_path, drift, capsys):
    start_run(config(generations=20), tmp_path / "long")
    short = tmp_path / "short"
    start_run(config(generations=12), short)
    before = (short / "records.csv").read_text()
    assert main(["resume", str(short), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["generations"] == 12 and summary["finished"] and summary["stop_reason"] == "generations 12 >= 12"
    assert (short / "records.csv").read_text() == before
    assert main(["resume", str(short), "--generations", "20", "--quiet"]) == 0
    assert "generations = 20" in (short / "config.toml").read_text()
    assert_same_run(tmp_path / "long", short)


def test_resume_without_a_checkpoint(tmp_path, drift, capsys):
    run_dir = tmp_path / "run"
    start_run(config(generations=3, every=0), run_dir, callbacks=[StopAt(2)])
    shutil.rmtree(run_dir / "checkpoints")
    assert main(["resume", str(run_dir), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"cannot resume {run_dir}: no checkpoint in {run_dir / 'checkpoints'}" in err
    assert f"blackbox run --config {run_dir / 'config.toml'} --out {run_dir} --overwrite" in err
    assert main(["resume", str(tmp_path / "nowhere"), "--quiet"]) == 2
    assert "is not a blackbox run directory (it has no config.toml)" in capsys.readouterr().err


def read_events(folder):
    """What TensorBoard shows from the event files of ``folder``: {tag: [(step, value)]}.

    Reads the TFRecord framing with tensorboardX's protos, session files in the order they were
    written, and applies purges: a session that starts with ``purge_step = P`` hides the earlier
    sessions' events at steps >= P.
    """
    import struct

    from tensorboardX.proto import event_pb2

    sessions = []
    for path in Path(folder).glob("events.out.tfevents.*"):
        data, offset, events = path.read_bytes(), 0, []
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset:offset + 8])
            events.append(event_pb2.Event.FromString(data[offset + 12:offset + 12 + length]))
            offset += 12 + length + 4
        sessions.append(events)
    sessions.sort(key=lambda events: events[0].wall_time)
    shown, purges = {}, []
    for events in sessions:
        for event in events:
            if event.HasField("session_log") and event.session_log.status == event.session_log.START:
                purges.append(event.step)
                shown = {tag: [(s, v) for s, v in series if s < event.step] for tag, series in shown.items()}
            for value in event.summary.value:
                shown.setdefault(value.tag, []).append((event.step, value.simple_value))
    return shown, purges


def test_tensorboard_events_and_purge_on_resume(tmp_path, drift):
    import_or_skip("tensorboard", "tensorboardX")
    run_dir = tmp_path / "run"
    cfg = run_config("openai-es:popsize=10", "drift:dim=4", seed=1, stop={"generations": 6},
                     checkpoint={"every": 2}, log={"tensorboard": True, "plot": False})
    start_run(cfg, run_dir, callbacks=[StopAt(5)])
    shutil.rmtree(run_dir / "checkpoints" / "gen-000005")
    resume_run(run_dir)  # from generation 4: generation 5 is run again
    records = read_csv_records(run_dir / "records.csv")
    generations, purges = read_events(run_dir / "tensorboard" / "generations")
    assert purges == [5]
    assert generations["fitness/center"] == [(r["generation"], pytest.approx(r["center"])) for r in records]
    assert [s for s, _ in generations["run/evaluations"]] == list(range(1, 7))
    by_steps, purges = read_events(run_dir / "tensorboard" / "steps")
    assert purges == [records[3]["steps"] + 1]
    assert by_steps["fitness/center"] == [(r["steps"], pytest.approx(r["center"])) for r in records]
    assert len(list((run_dir / "tensorboard" / "generations").iterdir())) == 2  # one file per session


def test_tensorboard_missing_gives_a_clear_error(tmp_path, monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_tensorboard(name, *args, **kwargs):
        if name in ("tensorboardX", "torch.utils.tensorboard"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    code = main(["run", "--problem", "sphere:dim=2", "--generations", "2", "--tensorboard", "--quiet",
                 "--out", str(tmp_path / "r")])
    assert code == 2
    assert "--tensorboard needs tensorboardX (pip install 'blackbox-es[tensorboard]')" in capsys.readouterr().err


def test_interrupted_generation_keeps_the_last_checkpoint(tmp_path, drift):
    class Interrupt(Callback):
        def on_generation(self, run, record):
            if record.generation == 7:
                raise KeyboardInterrupt

    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        start_run(config(), run_dir, callbacks=[Interrupt()])
    # Ctrl-C between generations: the state is whole, so the run is checkpointed where it stopped.
    assert [g for g, _ in list_checkpoints(run_dir / "checkpoints")][-1] == 7
    result = json.loads((run_dir / "result.json").read_text())
    assert result["finished"] is False and result["stop_reason"] == "interrupted"
    start_run(config(), tmp_path / "full")
    resume_run(run_dir)
    assert_same_run(tmp_path / "full", run_dir)


def test_a_failing_evaluation_keeps_the_previous_checkpoint(tmp_path, drift, monkeypatch):
    from tests.helpers.run_problems import Drift

    real = Drift.evaluate
    calls = {"n": 0}

    def flaky(self, params, seeds):
        calls["n"] += 1
        if calls["n"] == 9:
            raise RuntimeError("simulator crashed")
        return real(self, params, seeds)

    monkeypatch.setattr(Drift, "evaluate", flaky)
    run_dir = tmp_path / "run"
    with pytest.raises(Exception, match="simulator crashed"):
        start_run(config(), run_dir)
    assert [g for g, _ in list_checkpoints(run_dir / "checkpoints")] == [5]
    assert json.loads((run_dir / "result.json").read_text())["stop_reason"].startswith("error: EvaluationError")
    monkeypatch.setattr(Drift, "evaluate", real)
    start_run(config(), tmp_path / "full")
    resume_run(run_dir)
    assert_same_run(tmp_path / "full", run_dir)


def test_resume_script_text_is_valid_python():
    compile(textwrap.dedent(KILLED_RUN.format(tests="x")), "driver.py", "exec")


def test_solution_holds_the_problems_state(tmp_path, drift):
    start_run(config(generations=3), tmp_path / "run")
    solution = load_npz(tmp_path / "run" / "solution.npz")
    assert {"center", "best_params", "best_fitness", "problem/count", "problem/mean", "problem/m2"} <= set(solution)
    assert int(solution["problem/count"]) == 3 * 11  # 10 rows and the center, 3 generations
