"""Checkpoints: exact state trees, atomic writes, verification, fallback, no pickle, pruning."""

import io
import json
import math

import numpy as np
import pytest

import blackbox as bb
from blackbox.driver.loop import Run
from blackbox.driver.stop import GoalHeld
from blackbox.errors import CheckpointError
from blackbox.store import checkpoint as ck
from tests.helpers.run_problems import Drift


def test_state_trees_round_trip_exactly():
    tree = {
        "big": 2**127 + 12345, "neg": -(2**100), "float": 0.1, "nan": math.nan, "inf": -math.inf,
        "none": None, "flag": True, "text": "PCG64",
        "nested": {"array": np.arange(6, dtype=np.float32).reshape(2, 3), "empty": np.zeros(0),
                   "list": [1, np.int64(7), [np.float32(1.5), "x"]], "tuple": (1, 2)},
        "$dollar": {"$array": "not a marker"}, "scalar": np.float64(2.5), "zero_d": np.array(3),
        "strings": np.array(["a", "bc"]),
    }
    arrays = {}
    encoded = ck.encode_tree(tree, arrays)
    text = json.dumps(encoded, allow_nan=False)  # strict JSON
    decoded = ck.decode_tree(json.loads(text), arrays)
    assert decoded["big"] == 2**127 + 12345 and decoded["neg"] == -(2**100)
    assert math.isnan(decoded["nan"]) and decoded["inf"] == -math.inf
    assert decoded["none"] is None and decoded["flag"] is True and decoded["text"] == "PCG64"
    assert decoded["nested"]["array"].dtype == np.float32
    assert np.array_equal(decoded["nested"]["array"], tree["nested"]["array"])
    assert decoded["nested"]["list"][1] == 7 and type(decoded["nested"]["list"][1]) is np.int64
    assert type(decoded["nested"]["list"][2][0]) is np.float32
    assert decoded["nested"]["tuple"] == [1, 2]
    assert decoded["$dollar"] == {"$array": "not a marker"}
    assert type(decoded["scalar"]) is np.float64 and decoded["scalar"] == 2.5
    assert decoded["zero_d"].shape == () and list(decoded["strings"]) == ["a", "bc"]


@pytest.mark.parametrize("bad,message", [
    ({"x": np.array([object()], dtype=object)}, "cannot checkpoint x: object arrays would need pickle"),
    ({"x": {1: 2}}, "cannot checkpoint x: key 1 is not a string"),
    ({"x": [{"y": {1, 2}}]}, "cannot checkpoint x/0/y of type set"),
])
def test_unsupported_state_is_refused(bad, message):
    with pytest.raises(CheckpointError, match=message):
        ck.encode_tree(bad, {})


def make_run(strategy="openai-es", generations=7, seed=0, problem=None):
    problem = problem or Drift()
    es = bb.make_strategy(strategy, dim=problem.dim, popsize=10, seed=seed)
    run = Run(es, problem, bb.make_executor("serial"), seed)
    bb.optimize(es, problem, run.executor, generations=generations, stop=[GoalHeld(100.0, 3)], run=run)
    return run


def continue_run(run, generations):
    return bb.optimize(run.strategy, run.problem, run.executor, generations=generations,
                       stop=[GoalHeld(100.0, 3)], run=run)


@pytest.mark.parametrize("strategy", ["openai-es", "nes", "ga"])
def test_a_restored_run_continues_bit_identically(tmp_path, strategy):
    run = make_run(strategy)
    path = ck.save_checkpoint(tmp_path, run, config={"any": "thing"})
    assert path.name == "gen-000007"
    restored_checkpoint = ck.load_checkpoint(path)
    assert restored_checkpoint.config == {"any": "thing"} and restored_checkpoint.generation == 7
    problem = Drift()
    es = bb.make_strategy(strategy, dim=4, popsize=10, seed=99)  # another seed: the state must win
    restored = ck.restore_run(restored_checkpoint, es, problem, bb.make_executor("serial"))
    assert problem.count == run.problem.count and np.array_equal(problem.mean, run.problem.mean)
    assert [r.as_dict() for r in restored.records] == [r.as_dict() for r in run.records]
    a, b = continue_run(run, 15), continue_run(restored, 15)
    assert np.array_equal(a.center, b.center) and np.array_equal(a.best_params, b.best_params)
    assert [r.best for r in a.records] == [r.best for r in b.records]
    assert a.evaluations == b.evaluations and a.steps == b.steps


def test_stop_condition_state_is_kept(tmp_path):
    run = make_run()
    goal_held = next(c for c in run.stop if isinstance(c, GoalHeld))
    goal_held._streak = 2  # as if the goal had held for two generations
    restored_checkpoint = ck.load_checkpoint(ck.save_checkpoint(tmp_path, run))
    restored = ck.restore_run(restored_checkpoint, bb.make_strategy("openai-es", dim=4, popsize=10, seed=0),
                              Drift(), bb.make_executor("serial"))
    goal = GoalHeld(100.0, 3)
    restored.attach_stop([bb.stop.WallTime(60), goal])  # another budget: the streak still finds its owner
    assert goal._streak == 2


def test_the_written_files(tmp_path):
    run = make_run()
    path = ck.save_checkpoint(tmp_path, run, stop_reason="generations 7 >= 7")
    assert sorted(p.name for p in path.iterdir()) == ["arrays.npz", "state.json"]
    meta = json.loads((path / "state.json").read_text())
    assert meta["format"] == "blackbox-checkpoint" and meta["format_version"] == 1
    assert meta["generation"] == 7 and meta["stop_reason"] == "generations 7 >= 7"
    assert meta["state"]["strategy"]["center"] == {"$array": "strategy/center"}
    assert isinstance(meta["state"]["strategy"]["rng"]["state"]["state"], int)  # a 128-bit integer in JSON
    with np.load(path / "arrays.npz", allow_pickle=False) as data:
        assert {"strategy/center", "strategy/optimizer/m", "problem/mean", "run/best_params",
                "records/records"} <= set(data.files)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_an_interrupted_write_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    run = make_run()
    ck.save_checkpoint(tmp_path, run)
    continue_run(run, 8)
    calls = []

    def failing(path, data):
        calls.append(path.name)
        if path.name == "state.json":
            raise KeyboardInterrupt
        with open(path, "wb") as handle:
            handle.write(data)

    monkeypatch.setattr(ck, "write_synced", failing)
    with pytest.raises(KeyboardInterrupt):
        ck.save_checkpoint(tmp_path, run)
    assert calls == ["arrays.npz", "state.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["gen-000007"]
    assert ck.latest_checkpoint(tmp_path).generation == 7


def corrupt(path, how):
    npz = path / "arrays.npz"
    if how == "truncated":
        npz.write_bytes(npz.read_bytes()[:-100])
    elif how == "flipped":
        data = bytearray(npz.read_bytes())
        data[len(data) // 2] ^= 0xFF
        npz.write_bytes(bytes(data))
    elif how == "json":
        text = (path / "state.json").read_text()
        (path / "state.json").write_text(text[: len(text) // 2])
    elif how == "missing":
        npz.unlink()


@pytest.mark.parametrize("how,message", [
    ("truncated", r"arrays.npz is truncated or corrupt \(\d+ bytes, expected \d+\)"),
    ("flipped", r"arrays.npz is (corrupt \(its sha256 differs|not a valid|truncated or corrupt)"),
    ("json", "state.json is truncated or corrupt"),
    ("missing", "is incomplete: arrays.npz is missing"),
])
def test_a_bad_checkpoint_is_reported_and_the_previous_good_one_used(tmp_path, how, message):
    run = make_run()
    ck.save_checkpoint(tmp_path, run)
    continue_run(run, 9)
    bad = ck.save_checkpoint(tmp_path, run)
    corrupt(bad, how)
    with pytest.raises(CheckpointError, match=message):
        ck.load_checkpoint(bad)
    notes = []
    good = ck.latest_checkpoint(tmp_path, warn=notes.append, set_aside=True)
    assert good.generation == 7
    assert len(notes) == 1 and "using the previous checkpoint" in notes[0]
    assert "the bad one is kept as corrupt-gen-000009" in notes[0]
    assert (tmp_path / "corrupt-gen-000009").is_dir() and not bad.exists()


def test_no_usable_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint in"):
        ck.latest_checkpoint(tmp_path)
    path = ck.save_checkpoint(tmp_path, make_run())
    corrupt(path, "truncated")
    with pytest.raises(CheckpointError, match="no usable checkpoint in .*truncated or corrupt"):
        ck.latest_checkpoint(tmp_path)


def test_a_pickled_array_is_refused(tmp_path):
    path = ck.save_checkpoint(tmp_path, make_run())
    with np.load(path / "arrays.npz", allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["strategy/center"] = np.array([{"evil": "object"}], dtype=object)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # numpy pickles object arrays
    payload = buffer.getvalue()
    (path / "arrays.npz").write_bytes(payload)
    meta = json.loads((path / "state.json").read_text())
    import hashlib

    meta["arrays"].update(bytes=len(payload), sha256=hashlib.sha256(payload).hexdigest())  # a forged manifest
    (path / "state.json").write_bytes(ck.seal_state_json(json.dumps(meta)))  # and state.json's own checksum
    with pytest.raises(CheckpointError, match="holds pickled objects; refusing to load it"):
        ck.load_checkpoint(path)


def test_a_newer_format_is_refused(tmp_path):
    path = ck.save_checkpoint(tmp_path, make_run())
    meta = json.loads((path / "state.json").read_text())
    meta["format_version"] = 99
    (path / "state.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="has format version 99; this blackbox reads versions up to 1"):
        ck.load_checkpoint(path)


def test_prune_keeps_the_newest_and_the_best(tmp_path):
    class Scored(bb.Problem):
        """The center's fitness per generation follows a fixed script."""

        dim = 2
        script = [1.0, 5.0, 2.0, 3.0, 0.0, 1.0, 2.0]

        def __init__(self):
            self.calls = 0

        def evaluate(self, params, seeds):
            value = self.script[self.calls]
            self.calls += 1
            return bb.EvalResult(np.full(len(params), value), np.zeros(len(params), dtype=np.int64))

    saver = ck.Checkpointer(tmp_path, every=1, keep=2)
    bb.optimize(bb.make_strategy("nes", dim=2, popsize=4, seed=0), Scored(), generations=7, callbacks=[saver])
    assert [g for g, _ in ck.list_checkpoints(tmp_path)] == [2, 6, 7]  # newest two and the best (5.0)
    assert ck.best_checkpoint(tmp_path).name == "gen-000002"
    assert ck.load_checkpoint(tmp_path / "gen-000007").stop_reason == "generations 7 >= 7"


def test_the_checkpointer_remembers_only_the_newest_checkpoints_it_wrote(tmp_path):
    # it kept every path it ever wrote: a path (and an interned name) a checkpoint for ever, which
    # made the driver of a 10,000-generation run grow past the endurance test's bound
    saver = ck.Checkpointer(tmp_path, every=1, keep=2)
    bb.optimize(bb.make_strategy("nes", dim=2, popsize=4, seed=0), "sphere:dim=2", generations=30, callbacks=[saver])
    assert list(saver.saved) == [tmp_path / "gen-000029", tmp_path / "gen-000030"]


def test_code_changes_are_described():
    old = ck.code_fingerprint(bb.make_strategy("nes", dim=2), Drift())
    new = json.loads(json.dumps(old))
    new["numpy"] = "0.0"
    new["strategy"]["sha256"] = "0" * 16
    new["libraries"] = {**old.get("libraries", {}), "only-in-new-lib": "9.9"}
    changes = ck.code_changes(old, new)
    assert f"numpy version: {np.__version__} -> 0.0" in changes
    assert "strategy source (blackbox.strategies.search_gradient:NES or a module it imports) changed" in changes
    assert not any("only-in-new-lib" in c for c in changes)  # compared only where both list it
    assert ck.code_changes(old, old) == []


def test_source_closure_follows_the_package_imports():
    files = [p.replace("\\", "/").split("blackbox/")[-1] for p in ck.source_closure("blackbox.strategies.search_gradient")]
    assert {"strategies/search_gradient.py", "strategies/optim.py", "core/noise.py", "core/strategy.py",
            "core/population.py"} <= set(files)
    assert "strategies/pgpe.py" not in files and "cli/run.py" not in files


def test_a_run_passed_again_keeps_its_stop_state_and_stops_at_once_when_met():
    class Rising(bb.Problem):
        """The center's fitness is the number of evaluate calls so far."""

        dim = 2

        def __init__(self):
            self.calls = 0

        def evaluate(self, params, seeds):
            self.calls += 1
            return bb.EvalResult(np.full(len(params), float(self.calls)), np.zeros(len(params), dtype=np.int64))

    problem = Rising()
    es = bb.make_strategy("nes", dim=2, popsize=4, seed=0)
    run = Run(es, problem, bb.make_executor("serial"), 0)
    first = bb.optimize(es, problem, run.executor, generations=6, stop=[GoalHeld(5.0, 3)], run=run)
    assert first.stop_reason == "generations 6 >= 6"  # the goal held at 5 and 6: a streak of 2
    again = bb.optimize(es, problem, run.executor, generations=50, stop=[GoalHeld(5.0, 3)], run=run)
    assert again.generations == 7 and again.stop_reason == "center fitness >= 5 for 3 generations"
    done = bb.optimize(es, problem, run.executor, generations=50, stop=[GoalHeld(5.0, 3)], run=run)
    assert done.generations == 7 and problem.calls == 7  # already met: no further generation
    assert done.stop_reason == "center fitness >= 5 for 3 generations"
