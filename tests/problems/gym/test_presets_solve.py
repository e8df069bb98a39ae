"""The cheap presets solve their tasks: ``blackbox run --problem gym:ID`` with nothing else reaches the goal.

Each run is exactly what a user types (seed 0), judged as the preset judges it: the center's mean
return over the preset's fresh episodes reaches the task's goal within the preset's budget. The
expensive tasks (Hopper, HalfCheetah) are measured over seeds by
``benchmarks/rl_presets.py`` (BENCHMARKS.md).
"""

import importlib.util
import json

import pytest

pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install blackbox-es[gym])")

from blackbox.cli import main  # noqa: E402

HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None

CHEAP = [
    ("CartPole-v1", "openai-es", 475.0), ("Acrobot-v1", "openai-es", -100.0),
    ("MountainCarContinuous-v0", "ars", 90.0), ("Pendulum-v1", "ars", -200.0),
    pytest.param("LunarLander-v3", "openai-es", 200.0,
                 marks=pytest.mark.skipif(importlib.util.find_spec("Box2D") is None, reason="needs Box2D")),
    pytest.param("Swimmer-v5", "snes", 325.0, marks=pytest.mark.skipif(not HAS_MUJOCO, reason="needs MuJoCo")),
]


@pytest.mark.slow
@pytest.mark.parametrize("task,strategy,goal", CHEAP)
def test_the_preset_reaches_the_goal(tmp_path, capsys, task, strategy, goal):
    assert main(["run", "--problem", f"gym:{task}", "--out", str(tmp_path / "run"), "--json", "--no-plot"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["strategy"] == strategy
    check = summary["goal_check"]
    assert check["goal"] == goal and check["solved"], (summary["stop_reason"], check)
    assert check["confirmed_mean"] >= goal
    assert summary["stop_reason"].startswith("center's mean over")
