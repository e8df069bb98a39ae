"""A loaded state is checked as strictly as a constructor checks its arguments, and a checkpoint whose
state is not valid is skipped the way a checkpoint with bad bytes is.

Each case edits the newest checkpoint of a real run and seals it again (its checksums agree, as a
bug in a writer or an attacker would leave it): named explicitly, the checkpoint is refused with one
line naming it and the key; found by ``blackbox resume``, it is set aside and the previous one used,
and the run finishes bit-identically to one never interrupted."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import blackbox as bb
from blackbox.cli import main
from blackbox.errors import ConfigError
from blackbox.store.tree import encode_tree
from tests.reliability.helpers import assert_same_run_dir, note
from tests.reliability.test_untrusted_files import arrays_of, forge, npz_bytes

ARGS = ["--strategy", "openai-es:popsize=10,sigma=0.1", "--problem", "faulty:dim=4", "--seed", "3",
        "--checkpoint-every", "2", "--keep", "3", "--no-plot", "--quiet"]
COUNTS = {"tried": 0, "refused": 0, "fell_back": 0, "identical": 0}


def teardown_module(module):
    if not COUNTS["tried"]:
        return
    note("checkpoints with a bad state, sealed (refused naming the key)", inputs=COUNTS["tried"],
         refused=COUNTS["refused"], uncaught=COUNTS["tried"] - COUNTS["refused"])
    note("checkpoints with a bad state, sealed (resume falls back)", faults=COUNTS["fell_back"],
         runs=COUNTS["fell_back"], identical=COUNTS["identical"])


def strategy(meta):
    return meta["state"]["strategy"]


def garble(table, key, new):
    table[new] = table.pop(key)


def with_record(key, value):
    """Set ``key`` of the strategy and of the last record alike (as a buggy writer would: the two
    copies disagreeing is itself refused, see test_a_state_that_is_not_its_last_record_is_corrupt)."""
    def edit(meta, arrays):
        strategy(meta)[key] = value
        fields = [str(f) for f in arrays["records/record_fields"]]
        decoded = float(value["$float"]) if isinstance(value, dict) else value
        arrays["records/records"][-1, fields.index(key)] = decoded
    return edit


#: name: (edit of (state.json's tree, arrays), the message naming the key)
CASES = {
    "sigma-nan": (with_record("sigma", {"$float": "nan"}), r"state_dict/sigma must be finite, got nan"),
    "sigma-negative": (with_record("sigma", -1.0), r"state_dict/sigma must be >= 0, got -1.0"),
    "sigma-zero": (with_record("sigma", 0.0),
                   r"state_dict/sigma is 0.0, which openai-es refuses: sigma must be > 0, got 0.0"),
    "sigma-text": (lambda m, a: strategy(m).update(sigma="0.1"), r"state_dict/sigma must be a number, got '0.1'"),
    "adam-step-negative": (lambda m, a: strategy(m)["optimizer"].update(t=-1),
                           r"state_dict/optimizer/t must be >= 0, got -1"),
    "adam-step-fraction": (lambda m, a: strategy(m)["optimizer"].update(t=2.5),
                           r"state_dict/optimizer/t must be an integer, got 2.5"),
    "adam-step-ahead": (lambda m, a: strategy(m)["optimizer"].update(t=7),
                        r"state_dict/optimizer/t is 7, but a strategy at generation 6 has taken 6 optimizer steps "
                        r"\(1 a generation\): the state is inconsistent"),
    "adam-step-behind": (lambda m, a: strategy(m)["optimizer"].update(t=2),
                         r"state_dict/optimizer/t is 2, but a strategy at generation 6 has taken 6 optimizer steps"),
    "adam-v-negative": (lambda m, a: a.update({"strategy/optimizer/v": -a["strategy/optimizer/v"] - 1}),
                        r"state_dict/optimizer/v must be >= 0; entry 0 is -1\.\d+"),
    "adam-m-nan": (lambda m, a: a["strategy/optimizer/m"].__setitem__(1, np.nan),
                   r"state_dict/optimizer/m must be finite; entry 1 is nan \(1 non-finite in all\)"),
    "seed-negative": (lambda m, a: strategy(m).update(seed=-1), r"state_dict/seed must be >= 0, got -1"),
    "update-norm-inf": (with_record("update_norm", {"$float": "inf"}),
                        r"state_dict/update_norm must be finite, got inf"),
    "rng-stream": (lambda m, a: strategy(m)["rng"]["state"].update(inc=strategy(m)["rng"]["state"]["inc"] ^ 2),
                   r"state_dict/rng/state/inc is \d+, but seed 3 gives the stream \d+"),
    "rng-even-increment": (lambda m, a: strategy(m)["rng"]["state"].update(inc=strategy(m)["rng"]["state"]["inc"] ^ 1),
                           r"state_dict/rng/state/inc must be odd \(a PCG64 stream's increment\), got \d+"),
    "rng-has-uint32": (lambda m, a: strategy(m)["rng"].update(has_uint32=5), r"state_dict/rng/has_uint32 must be <= 1, got 5"),
    "rng-state-float": (lambda m, a: strategy(m)["rng"]["state"].update(state=1.5),
                        r"state_dict/rng/state/state must be an integer, got 1.5"),
    "rng-type": (lambda m, a: strategy(m)["rng"].update(bit_generator="MT19937"),
                 r"state_dict/rng does not fit this run's generator: it must be the state of a PCG64 generator, "
                 r"got 'MT19937'"),
    "sigma-key-garbled": (lambda m, a: garble(strategy(m), "sigma", "sigmb"),
                          r"state_dict has no 'sigma'; it was not made by Strategy.state_dict\(\)"),
    "optimizer-key-garbled": (lambda m, a: garble(strategy(m)["optimizer"], "v", "w"),
                              r"state_dict/optimizer has no 'v'"),
    "run-steps-negative": (lambda m, a: m["state"]["run"].update(steps=-5), r"run state/steps must be >= 0, got -5"),
    "run-elapsed-nan": (lambda m, a: m["state"]["run"].update(elapsed={"$float": "nan"}),
                        r"run state/elapsed must be finite, got nan"),
    "run-best-nan": (lambda m, a: m["state"]["run"].update(best_fitness={"$float": "nan"}),
                     r"run state/best_fitness is NaN, which never ranks best"),
    "run-key-garbled": (lambda m, a: garble(m["state"]["run"], "evaluations", "evaluationz"),
                        r"does not fit this run: KeyError: 'evaluations'"),
}


@pytest.fixture(scope="module")
def clean(faulty, tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "run"
    assert main(["run", *ARGS, "--generations", "8", "--out", str(out)]) == 0
    return out


def tampered_run(tmp_path, how):
    out = tmp_path / "run"
    assert main(["run", *ARGS, "--generations", "6", "--out", str(out)]) == 0
    path = out / "checkpoints" / "gen-000006"
    meta, arrays = json.loads((path / "state.json").read_text()), arrays_of(path)
    CASES[how][0](meta, arrays)
    forge(path, npz_bytes(arrays), meta_change=lambda m: m.update({k: v for k, v in meta.items() if k != "arrays"}))
    return out, path


@pytest.mark.parametrize("how", list(CASES))
def test_a_bad_state_is_refused_naming_the_checkpoint_and_the_key(faulty, tmp_path, capsys, how):
    out, path = tampered_run(tmp_path, how)
    COUNTS["tried"] += 1
    capsys.readouterr()
    assert main(["resume", str(out), "--checkpoint", str(path), "--generations", "8", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"blackbox resume: error: cannot resume {out} from gen-000006: ") and err.count("\n") == 1
    assert re.search(CASES[how][1], err), err
    assert "lower sigma" not in err
    COUNTS["refused"] += 1


@pytest.mark.parametrize("how", list(CASES))
def test_resume_falls_back_past_a_checkpoint_with_a_bad_state(faulty, clean, tmp_path, capsys, how):
    out, path = tampered_run(tmp_path, how)
    capsys.readouterr()
    assert main(["resume", str(out), "--generations", "8", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"warning: checkpoint {path} holds a state that is not valid: " in err, err
    assert re.search(CASES[how][1], err), err
    assert "using the previous checkpoint (the bad one is kept as corrupt-gen-000006)" in err
    COUNTS["fell_back"] += 1
    assert_same_run_dir(clean, out)
    COUNTS["identical"] += 1


@pytest.mark.parametrize("key", ["sigma", "update_norm", "generation"])
def test_a_state_that_is_not_its_last_record_is_corrupt(faulty, clean, tmp_path, capsys, key):
    """The last record holds a second copy of the strategy's generation, sigma and update norm: a
    flipped digit in one of them (a checkpoint of 0.1.0 has no checksum over state.json) is corruption."""
    out = tmp_path / "run"
    assert main(["run", *ARGS, "--generations", "6", "--out", str(out)]) == 0
    path = out / "checkpoints" / "gen-000006"
    meta = json.loads((path / "state.json").read_text())
    strategy(meta)[key] = strategy(meta)[key] + (1 if key == "generation" else 1e-12)
    forge(path, (path / "arrays.npz").read_bytes(), meta_change=lambda m: m.update(state=meta["state"]))
    capsys.readouterr()
    assert main(["resume", str(out), "--generations", "8", "--quiet"]) == 0
    err = capsys.readouterr().err
    if key == "generation":
        assert "state.json names generation 6 but holds the strategy of generation 7" in err, err
    else:
        assert re.search(rf"gen-000006 is corrupt: ValueError: the strategy's {key} [-\d.e]+ is not its last "
                         rf"record's [-\d.e]+; using the previous checkpoint", err), err
    assert_same_run_dir(clean, out)


def test_a_corrupt_optimizer_state_is_named_at_load_not_a_generation_later():
    """Before: a negative Adam second moment loaded silently, and the next tell() diverged with
    advice to lower sigma."""
    strategy_ = bb.make_strategy("openai-es", dim=4, popsize=8, seed=0)
    state = strategy_.state_dict()
    state["optimizer"]["v"] = np.full(4, -1.0)
    before = strategy_.state_dict()
    with pytest.raises(ConfigError, match=r"^state_dict/optimizer/v must be >= 0; entry 0 is -1.0$"):
        strategy_.load_state_dict(state)
    after = strategy_.state_dict()  # nothing changed
    assert json.dumps(encode_tree(after, {})) == json.dumps(encode_tree(before, {}))


@pytest.mark.parametrize("spec,key,value,allowed", [
    ("openai-es", "sigma", 0.0, False),  # a fixed sigma is never 0
    ("openai-es:sigma_decay=0.5", "sigma", 0.0, True),  # a decaying sigma without a floor may underflow to 0
    ("openai-es:sigma_decay=0.5,sigma_min=0.01", "sigma", 0.005, False),  # never below its floor
    ("ga", "sigma", -0.1, False),
    ("cma-es", "sigma", 0.0, True),  # adapted by multiplying: may underflow
    ("xnes", "sigma", 0.0, True),
    ("sep-cma-es", "sigma", -1e-9, False),
    ("cem", "stdev", np.zeros(3), True),  # the elites' spread may vanish (sigma_min 0)
    ("pgpe", "stdev", np.zeros(3), False),  # floored at 1e-12
    ("snes", "stdev", np.full(3, -1.0), False),
    ("sep-cma-es", "c", np.zeros(3), False),  # floored at 1e-300
    ("cma-es", "D", np.zeros(3), False),
    ("cma-es", "eigen_generation", -1, False),
    ("pgpe", "optimizer", {"t": -3, "velocity": np.zeros(3)}, False),
])
def test_zero_and_negative_step_sizes_only_where_the_strategy_can_reach_them(spec, key, value, allowed):
    strategy_ = bb.make_strategy(spec, dim=3, seed=1)
    state = strategy_.state_dict()
    state[key] = value
    if allowed:
        strategy_.load_state_dict(state)
    else:
        with pytest.raises(ConfigError, match=f"state_dict/{key}"):
            strategy_.load_state_dict(state)


@pytest.mark.parametrize("key, change", [("evaluations", 1), ("evaluations", -20), ("steps", 7)])
def test_run_counters_that_are_not_the_last_record_are_corrupt(faulty, clean, tmp_path, capsys, key, change):
    """Issue 25: the run's evaluation count, edited and sealed again, resumed with exit 0 and another
    result; the last record holds a second copy of both counters."""
    out = tmp_path / "run"
    assert main(["run", *ARGS, "--generations", "6", "--out", str(out)]) == 0
    path = out / "checkpoints" / "gen-000006"
    meta = json.loads((path / "state.json").read_text())
    before = meta["state"]["run"][key]
    meta["state"]["run"][key] = before + change
    forge(path, (path / "arrays.npz").read_bytes(), meta_change=lambda m: m.update(state=meta["state"]))
    capsys.readouterr()
    assert main(["resume", str(out), "--checkpoint", str(path), "--generations", "8", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == (f"blackbox resume: error: checkpoint {path} is corrupt: ValueError: the run's {key} count "
                   f"{before + change} is not its last record's {before}\n")
    assert main(["resume", str(out), "--generations", "8", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "using the previous checkpoint (the bad one is kept as corrupt-gen-000006)" in err, err
    assert_same_run_dir(clean, out)
    note("run counters edited and sealed again (refused, then resume falls back)", faults=1, runs=1)
