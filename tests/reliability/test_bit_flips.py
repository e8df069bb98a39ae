"""Random bit flips in real checkpoints: none may resume silently with a different result.

Each trial copies a real run, flips bits chosen by a seeded RNG in ``state.json`` or ``arrays.npz`` of
its newest checkpoint, and runs ``blackbox resume`` to the end of the budget. An outcome is one of:

- ``fell back``: the flipped checkpoint was reported and set aside, the previous one used, and the
  run finished bit-identically to one never interrupted;
- ``refused``: the resume stopped with one clear error (none is expected while an older intact
  checkpoint exists, but it would be safe);
- ``silent, same``: nothing reported and the same result (the flip hit nothing that matters);
- ``silent, different``: nothing reported and another result. This must never happen.

The checkpoints of blackbox 0.1.0 (``tests/golden/data/v0.1.0-runs``) have no checksum over
state.json; the long test flips bits in them too and counts what the semantic checks catch, and
what still resumes silently with another result (the flipped digits of a generator's position, a
float's last bits): that figure is reported, not asserted, as it is the reason the checksum exists.
"""

from __future__ import annotations

import json
import shutil
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

from blackbox.cli import main
from blackbox.config.run import set_value
from blackbox.driver.logs import read_csv_records
from blackbox.errors import BlackboxError
from blackbox.files import load_npz
from blackbox.lab.runs import resume_run
from tests.golden.cases import DATA, encode, read_run
from tests.reliability.helpers import note, without_timings

OUTCOMES = ("fell back", "refused", "silent, same", "silent, different")


def run_args(out: Path, strategy: str, generations: int) -> list[str]:
    return ["run", "--strategy", strategy, "--problem", "faulty:dim=5", "--seed", "11", "--generations",
            str(generations), "--checkpoint-every", "2", "--keep", "3", "--no-plot", "--quiet", "--out", str(out)]


def same_run(a: Path, b: Path) -> bool:
    if without_timings(read_csv_records(a / "records.csv")) != without_timings(read_csv_records(b / "records.csv")):
        return False
    sa, sb = load_npz(a / "solution.npz"), load_npz(b / "solution.npz")
    return all(sa[k].tobytes() == sb[k].tobytes() for k in ("center", "best_params", "best_fitness"))


def flip_bits(path: Path, rng: np.random.Generator, count: int) -> list[int]:
    data = bytearray(path.read_bytes())
    bits = sorted(int(b) for b in rng.choice(len(data) * 8, size=count, replace=False))
    for bit in bits:
        data[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))
    return bits


def resume(run: Path, generations: int | None = None) -> tuple[str | None, list[str]]:
    """``(error or None, warnings)`` of ``blackbox resume`` (in this process)."""
    notes: list[str] = []

    def change(config):
        if generations is not None:
            set_value(config, ("stop", "generations"), generations, "--generations")

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            resume_run(run, change=change, warn=notes.append)
    except BlackboxError as exc:
        return str(exc), notes
    return None, notes


def attack(faulty_run: Path, clean: Path, work: Path, rng: np.random.Generator, trials: int,
           bits: tuple[int, ...] = (1,)) -> dict[str, dict[str, int]]:
    """Flip bits in the newest checkpoint of copies of ``faulty_run``; outcomes per file."""
    newest = sorted((faulty_run / "checkpoints").glob("gen-*"))[-1].name
    counts = {name: dict.fromkeys(OUTCOMES, 0) for name in ("state.json", "arrays.npz")}
    examples = []
    for trial in range(trials):
        name = ("state.json", "arrays.npz")[trial % 2]
        run = work / f"trial-{trial}"
        shutil.copytree(faulty_run, run)
        flipped = flip_bits(run / "checkpoints" / newest / name, rng, int(rng.choice(bits)))
        error, notes = resume(run, generations=8)
        if error is not None:
            outcome = "refused"
        elif any(newest in n and "using the previous checkpoint" in n for n in notes):
            outcome = "fell back" if same_run(clean, run) else "silent, different"  # a fallback that differs: a bug
        else:
            outcome = "silent, same" if same_run(clean, run) else "silent, different"
        counts[name][outcome] += 1
        if outcome == "silent, different":
            examples.append(f"{name} bits {flipped}")
        shutil.rmtree(run)
    assert not examples, f"resumed silently with another result: {examples}"
    return counts


def record(label: str, counts: dict[str, dict[str, int]]) -> None:
    for name, outcome in counts.items():
        total = sum(outcome.values())
        note(f"bit flips in {name} of {label}", inputs=total, refused=total - outcome["silent, same"]
             - outcome["silent, different"], fell_back=outcome["fell back"], silent_same=outcome["silent, same"],
             silent_different=outcome["silent, different"], uncaught=outcome["silent, different"])


@pytest.fixture(scope="module")
def runs(faulty, tmp_path_factory):
    """For each strategy: a run stopped at generation 6 and a clean run of 8 generations."""
    root = tmp_path_factory.mktemp("flips")
    made = {}
    for strategy in ("openai-es:popsize=10,sigma=0.1", "cma-es:popsize=8", "pgpe:popsize=10"):
        key = strategy.split(":")[0]
        assert main(run_args(root / f"{key}-cut", strategy, 6)) == 0
        assert main(run_args(root / f"{key}-clean", strategy, 8)) == 0
        made[key] = (root / f"{key}-cut", root / f"{key}-clean")
    return made


def test_random_bit_flips_never_resume_silently_with_another_result(runs, tmp_path):
    rng = np.random.default_rng(2026)
    cut, clean = runs["openai-es"]
    counts = attack(cut, clean, tmp_path, rng, trials=40)
    for name, outcome in counts.items():
        assert outcome["silent, different"] == 0 and outcome["refused"] == 0, (name, outcome)
        assert outcome["fell back"] + outcome["silent, same"] == 20
    record("openai-es checkpoints", counts)


@pytest.mark.reliability_long
@pytest.mark.parametrize("strategy", ["openai-es", "cma-es", "pgpe"])
def test_random_bit_flips_long(runs, tmp_path, strategy):
    rng = np.random.default_rng(zlib.crc32(strategy.encode()))
    cut, clean = runs[strategy]
    counts = attack(cut, clean, tmp_path, rng, trials=200, bits=(1, 1, 2, 3, 8))
    for outcome in counts.values():
        assert outcome["silent, different"] == 0
    record(f"{strategy} checkpoints (1 to 8 bits)", counts)


@pytest.mark.reliability_long
@pytest.mark.parametrize("name", ["cma-es-rosenbrock", "sep-cma-es-quadratic"])
def test_random_bit_flips_in_v010_checkpoints_are_counted(tmp_path, name):
    """0.1.0's state.json has no checksum: count what the semantic checks catch and what still slips."""
    rng = np.random.default_rng(len(name))
    want = json.loads((DATA / "v0.1.0-runs" / f"{name}.json").read_text())
    counts = dict.fromkeys(OUTCOMES, 0)
    for trial in range(150):
        run = tmp_path / f"trial-{trial}"
        shutil.copytree(DATA / "v0.1.0-runs" / name, run)
        flip_bits(run / "checkpoints" / "gen-000002" / "state.json", rng, 1)
        error, notes = resume(run)
        if error is not None or notes and "using the previous checkpoint" in " ".join(notes):
            counts["refused"] += 1  # the only checkpoint: refused, or set aside and then no usable one
        else:
            same = json.loads(json.dumps(encode(read_run(run)), sort_keys=True)) == want
            counts["silent, same" if same else "silent, different"] += 1
        shutil.rmtree(run)
    total = sum(counts.values())
    note(f"bit flips in state.json of 0.1.0 checkpoints ({name}, no state checksum)", inputs=total,
         refused=counts["refused"], silent_same=counts["silent, same"],
         silent_different=counts["silent, different"])
