"""benchmarks/rl_curves.py: docs/rl.md shows one figure per task in the committed curves, each figure is
there, and the grid keeps a stopped run at its last value."""

from __future__ import annotations

import importlib
import json
import sys

import numpy as np
import pytest

from tests.helpers import ROOT


@pytest.fixture(scope="module")
def curves():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("rl_curves")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_docs_list_a_figure_for_every_task_with_curves(curves):
    tasks = sorted(json.loads(curves.CURVES.read_text()))
    assert tasks, "benchmarks/rl_curves.json holds no task"
    docs = ROOT / "docs" / "rl.md"
    text = docs.read_text()
    block = text[text.index(curves.MARKERS[0]) + len(curves.MARKERS[0]):text.index(curves.MARKERS[1])]
    assert block == curves.markdown(tasks, docs, curves.FIGURES), "rerun: python benchmarks/rl_curves.py --docs docs/rl.md"
    for task in tasks:
        assert (curves.FIGURES / curves.figure_name(task)).is_file(), task


def test_grid_holds_a_finished_run_at_its_last_value_and_leaves_the_start_empty(curves):
    grid, rows = curves.on_grid({"1": [[10, 1.0], [20, 3.0]], "2": [[5, 0.0], [40, 8.0]]}, points=9)
    assert grid[0] == 0.0 and grid[-1] == 40.0
    np.testing.assert_array_equal(rows[0][grid > 20], 3.0)  # run 1 stopped at 20 steps
    assert np.isnan(rows[0][0]) and np.isnan(rows[1][0])    # before each run's first generation
    assert rows[1][-1] == 8.0


def test_the_y_label_says_how_many_episodes_a_center_point_is(curves):
    assert curves.center_episodes("Pendulum-v1") == "mean of 5 training episodes"  # its preset plays 5
    assert curves.center_episodes("CartPole-v1") == "one training episode"
    assert curves.center_episodes("Pusher-v5") == "one training episode"  # no preset
