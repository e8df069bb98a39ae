"""The presets' published table stays true: docs/rl.md and ``blackbox list presets`` show the committed
results file, and the cheap presets re-run on one fresh seed take exactly the steps it records.

A change that moves the random streams fails here until the table is regenerated with it:
``python benchmarks/rl_presets.py --seeds 100-109 --tasks CartPole-v1 Acrobot-v1 MountainCarContinuous-v0``
then ``python -m blackbox.problems.gym.preset_table --write docs/rl.md``.
"""

import json

import pytest

pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")

from blackbox.cli import main  # noqa: E402
from blackbox.problems.gym.preset_table import (  # noqa: E402
    MARKERS,
    MEASURED_MARKERS,
    load_results,
    markdown,
    measured_markdown,
    preset_rows,
)
from blackbox.problems.gym.presets import PRESETS, recommended_strategy  # noqa: E402
from tests.helpers import ROOT  # noqa: E402

CHEAP = ["CartPole-v1", "Acrobot-v1", "MountainCarContinuous-v0"]


def test_docs_show_the_generated_table():
    text = (ROOT / "docs" / "rl.md").read_text()
    start, end = text.index(MARKERS[0]) + len(MARKERS[0]), text.index(MARKERS[1])
    assert text[start:end].strip() == markdown(), "run: python -m blackbox.problems.gym.preset_table --write docs/rl.md"


def test_benchmarks_show_every_measured_task_with_its_seeds_and_where_it_was_measured():
    text = (ROOT / "BENCHMARKS.md").read_text()
    start, end = text.index(MEASURED_MARKERS[0]) + len(MEASURED_MARKERS[0]), text.index(MEASURED_MARKERS[1])
    table = text[start:end].strip()
    assert table == measured_markdown(), "run: python -m blackbox.problems.gym.preset_table --write BENCHMARKS.md"
    results = load_results()
    rows = table.splitlines()[2:]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == sorted(results)
    for row in rows:
        task = row.split(" | ")[0].lstrip("| ")
        assert results[task]["commit"] in row and results[task]["date"] in row


def test_every_published_row_was_measured_with_its_presets_strategy_now():
    for task, row in load_results().items():
        assert row["strategy"] == recommended_strategy(task), (
            f"{task}'s results are {row['strategy']}'s but its preset runs {recommended_strategy(task)}: run "
            f"python benchmarks/rl_presets.py --seeds 100-109 --tasks {task}")


def test_a_row_measured_with_another_strategy_than_the_presets_reads_not_measured():
    results = {"HalfCheetah-v5": {**load_results()["HalfCheetah-v5"], "strategy": "openai-es"}}
    row = next(r for r in preset_rows(results) if r["task"] == "HalfCheetah-v5")
    assert (row["strategy"], row["solved"], row["steps"], row["wall"]) == (
        recommended_strategy("HalfCheetah-v5"), "not measured (the results are openai-es's, the preset before)",
        "not measured", "not measured")
    assert "| HalfCheetah-v5 | 4,800 (Gymnasium) | openai-es | " in measured_markdown(results)


def test_list_presets_shows_every_preset_with_its_goal_and_measurements(capsys):
    assert main(["list", "presets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["task"] for r in rows] == sorted(PRESETS)
    assert rows == json.loads(json.dumps(preset_rows()))
    by_task = {r["task"]: r for r in rows}
    assert by_task["Hopper-v5"]["goal"] == 3120.0 and by_task["Hopper-v5"]["goal_source"] == "ARS paper"
    assert by_task["HalfCheetah-v5"]["goal"] == 4800.0 and by_task["HalfCheetah-v5"]["goal_source"] == "Gymnasium"
    measured = load_results()
    for task, row in by_task.items():
        assert (row["steps"] == "not measured") == (task not in measured)


def test_the_results_file_has_the_cheap_tasks_on_the_fresh_seeds():
    rows = load_results()
    for task in CHEAP:
        assert sorted(int(seed) for seed in rows[task]["trials"]) == list(range(100, 110)), task


@pytest.mark.parametrize("task", CHEAP)
def test_a_cheap_preset_takes_the_published_steps(tmp_path, capsys, task):
    published = load_results()[task]["trials"]["100"]
    assert main(["run", "--problem", f"gym:{task}", "--seed", "100", "--out", str(tmp_path / "r"), "--json",
                 "--no-plot"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["goal_check"]["solved"], summary["steps"]) == (published["solved"], published["steps"]), (
        "the preset's result moved: regenerate the table (see this module's docstring)")


def test_a_rows_seeds_are_a_range_only_when_they_are_consecutive():
    from blackbox.problems.gym.preset_table import seed_list

    assert seed_list([100, 101, 102]) == "100-102" and seed_list([100]) == "100"
    assert seed_list([101, 102, 104]) == "101, 102, 104"  # 103 not run (yet): never "101-104"


def test_an_unsolved_seed_of_a_shifted_preset_says_its_return_is_the_training_one():
    """Walker2d's preset trains with reward_shift=-1: its best centers are not on the goal's scale. Swimmer's
    trains on cut episodes, but its center plays full ones: its best center is the task's own return."""
    trial = {"solved": False, "steps": 10, "wall": 1.0, "best_center": 2682.74}
    results = {task: {"commit": "abc1234", "date": "2026-11-27 18:31 UTC", "load": "1.0-2.0",
                      "trials": {"103": trial, "104": {**trial, "solved": True, "best_center": 3400.0}}}
               for task in ("Walker2d-v5", "HalfCheetah-v5", "Swimmer-v5", "BipedalWalker-v3")}
    rows = {row.split(" | ")[0].lstrip("| "): row for row in measured_markdown(results).splitlines()[2:]}
    assert "| seed 103: 2,682.7 (training return, -1 a step) |" in rows["Walker2d-v5"]
    assert "| seed 103: 2,682.7 |" in rows["HalfCheetah-v5"]  # no shift: the task's own return
    # Swimmer's preset cuts its population's episodes at 400 of its 1,000 steps, not the center's
    assert "| seed 103: 2,682.7 |" in rows["Swimmer-v5"]
    # BipedalWalker's preset floors its training rewards at -1 (a fall's -100 counts as -1)
    assert "| seed 103: 2,682.7 (training return, rewards below -1 counted as -1) |" in rows["BipedalWalker-v3"]
