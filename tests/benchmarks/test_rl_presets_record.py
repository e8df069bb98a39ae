"""benchmarks/rl_presets.py's results row: a long trial's load is read before and after it, not only at its start."""

from __future__ import annotations

import argparse
import json

import pytest

from tests.helpers import benchmark_module


def test_a_rows_load_spans_the_load_before_and_after_each_trial(tmp_path):
    presets = benchmark_module("rl_presets")
    trial = {"seed": 102, "command": "blackbox run --problem gym:Walker2d-v5 --seed 102", "solved": True,
             "steps": 10_380_084, "wall": 2107.398, "best_center": 3437.8, "date": "2026-11-27 13:49 UTC",
             "load": [0.52, 0.84, 1.21, 3.72, 3.56, 3.41], "curve": [[1000, 2.0]],
             "strategy": {"name": "ars", "popsize": 80}}
    later = {**trial, "seed": 103, "load": [2.4, 2.0, 1.9, 4.1, 3.0, 2.5], "date": "2026-11-27 14:30 UTC"}
    results = tmp_path / "results.json"
    presets.record_results(results, "Walker2d-v5", [trial, later], "465da54")
    row = json.loads(results.read_text())["rows"]["Walker2d-v5"]
    assert row["load"] == "0.5-4.1 (1-min, before and after each trial)"
    assert row["date"] == "2026-11-27 14:30 UTC" and row["command"] == "blackbox run --problem gym:Walker2d-v5"
    assert row["strategy"] == "ars"  # what was measured, so a preset that changes its strategy shows unmeasured
    assert row["trials"]["102"] == {"solved": True, "steps": 10_380_084, "wall": 2107.4, "best_center": 3437.8}
    curves = json.loads((tmp_path / "results-curves.json").read_text())
    assert curves["Walker2d-v5"] == {"commit": "465da54", "seeds": {"102": [[1000, 2.0]], "103": [[1000, 2.0]]}}


def test_seeds_name_a_range_or_a_count_and_a_count_of_none_is_one_line():
    presets = benchmark_module("rl_presets")
    assert presets.seed_range("100-102") == [100, 101, 102]
    assert presets.seed_range("0-0") == [0]
    assert presets.seed_range("3") == [0, 1, 2]
    with pytest.raises(argparse.ArgumentTypeError) as error:
        presets.seed_range("0")
    assert str(error.value) == ("--seeds 0 names no seed: N counts seeds 0..N-1, so it must be at least 1; for seed 0 "
                                "alone give 0-0")
    with pytest.raises(argparse.ArgumentTypeError, match="--seeds must be N or FIRST-LAST such as 100-109, got '5-2'"):
        presets.seed_range("5-2")
